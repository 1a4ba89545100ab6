#!/usr/bin/env bash
# Sets up everything hftrain needs and builds it (Release, into build/). Idempotent: a second run
# installs nothing and only rebuilds what changed.
#
#   scripts/setup.sh                     apt packages that are missing, LibTorch, configure, build
#   scripts/setup.sh --bundle DIR        download every package the build needs into DIR
#   scripts/setup.sh --from-bundle DIR   build from DIR with no network and no apt
#   scripts/setup.sh --no-build          install and configure only
#   scripts/setup.sh --test-tools        also clang and its libFuzzer runtime, which the fuzz tests
#                                        run under (scripts/test.sh passes it)
#
# LibTorch: reused from Torch_DIR (…/share/cmake/Torch) or HFTRAIN_TORCH_DIR (a torch package
# folder) when set; otherwise the PyPI torch wheel in the project-local virtual environment .venv.
set -euo pipefail
shopt -s inherit_errexit

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${HFTRAIN_BUILD_DIR:-$root/build}
torch_spec=${HFTRAIN_TORCH_SPEC:-torch>=2.11,<2.12}
mode=install
bundle=""
do_build=1
test_tools=0
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) mode=bundle; bundle=${2:?--bundle needs a folder}; shift 2 ;;
    --from-bundle) mode=from-bundle; bundle=${2:?--from-bundle needs a folder}; shift 2 ;;
    --no-build) do_build=0; shift ;;
    --test-tools) test_tools=1; shift ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }
die() { printf '[setup] error: %s\n' "$*" >&2; exit 2; }

# Debian packages the build needs. Tools first, then the libraries (with their -dev halves).
tool_pkgs=(cmake ninja-build g++ ccache python3 python3-venv)
lib_pkgs=(libcurl4-openssl-dev libpcre2-dev libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev catch2 nlohmann-json3-dev libxxhash-dev libopenmpi-dev openmpi-bin)
# The quickstart's corpus.
data_pkgs=(fortunes fortunes-min)
# Only for the tests: the fuzz targets' libFuzzer + sanitizer build (tests/fuzz/libfuzzer).
test_pkgs=(clang libclang-rt-dev)

sudo_cmd() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
pkg_missing() { ! dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

install_apt() {
  local missing=()
  local wanted=("${tool_pkgs[@]}" "${lib_pkgs[@]}" "${data_pkgs[@]}")
  [ "$test_tools" = 1 ] && wanted+=("${test_pkgs[@]}")
  for p in "${wanted[@]}"; do
    if [ "$p" = python3 ] || [ "$p" = python3-venv ]; then
      # Any python3 that can make a venv with pip will do (pyenv, conda, Debian's). Debian's own
      # python3 has the venv module without ensurepip until python3-venv is installed.
      command -v python3 >/dev/null && python3 -c 'import ensurepip, venv' >/dev/null 2>&1 && continue
    fi
    pkg_missing "$p" && missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    say "Debian packages: all present"
    return
  fi
  say "installing Debian packages: ${missing[*]}"
  sudo_cmd apt-get update -qq
  sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
}

# The closure of library dependencies of the given packages, as a plain system would install it:
# the first alternative of each `a | b` dependency, no recommends, and neither what every Debian
# system already has (essential/required) nor toolchains (compilers, perl, python), which the
# target has or does not need to link hftrain.
resolve_debs() {
  local base toolchain='^(gcc|g\+\+|cpp|gfortran|flang|clang|llvm|binutils|perl|python3|libperl|libpython|libllvm|libclang|libflang|libmlir|libgcc-[0-9]+-dev|libstdc\+\+-[0-9]+-dev|libgcc-s1$|libstdc\+\+6$|libc6(-dev)?$|libc-dev-bin$|linux-libc-dev$|libcrypt(1|-dev)$|libnsl(2|-dev)$|libtirpc-dev$|rpcsvc-proto$|libgfortran-[0-9]+-dev|libz3|lib.*-dev-bin$|dpkg-dev|make$|patch$)'
  base=$(dpkg-query -W -f='${Package} ${Essential} ${Priority}\n' 2>/dev/null | awk '$2=="yes"||$3=="required"{print $1}')
  local -A seen=()
  local queue=("$@") p line alt=0
  while [ ${#queue[@]} -gt 0 ]; do
    p=${queue[0]}
    queue=("${queue[@]:1}")
    [ -n "${seen[$p]:-}" ] && continue
    seen[$p]=1
    grep -qx -- "$p" <<<"$base" && continue
    [[ "$p" =~ $toolchain ]] && continue
    apt-cache show "$p" >/dev/null 2>&1 || continue  # virtual package
    echo "$p"
    alt=0
    while IFS= read -r line; do
      # "  Depends: x" starts a dependency; " |Depends: x" says the next line is an alternative.
      if [ "$alt" = 1 ]; then
        [[ "$line" == *" |"* ]] || alt=0
        continue
      fi
      [[ "$line" =~ ^\ [\ \|](Pre)?Depends:\ ([^<][^ ]*)$ ]] || continue
      queue+=("${BASH_REMATCH[2]%:any}")
      [[ "$line" == " |"* ]] && alt=1
    done < <(apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks \
               --no-replaces --no-enhances "$p" 2>/dev/null | tail -n +2)
  done
}

venv_torch_dir() { ls -d "$root"/.venv/lib/python3*/site-packages/torch/share/cmake/Torch 2>/dev/null | tail -n 1 || true; }

# Prints the Torch_DIR to use, installing the wheel into .venv when needed.
# $1: a folder of wheels to install from with no index (the offline bundle), if any.
ensure_torch() {
  if [ -n "${Torch_DIR:-}" ]; then
    [ -f "$Torch_DIR/TorchConfig.cmake" ] || die "Torch_DIR=$Torch_DIR has no TorchConfig.cmake"
    say "LibTorch: reusing Torch_DIR=$Torch_DIR" >&2; echo "$Torch_DIR"; return
  fi
  if [ -n "${HFTRAIN_TORCH_DIR:-}" ]; then
    [ -f "$HFTRAIN_TORCH_DIR/share/cmake/Torch/TorchConfig.cmake" ] || die "HFTRAIN_TORCH_DIR=$HFTRAIN_TORCH_DIR is not a torch package folder"
    say "LibTorch: reusing HFTRAIN_TORCH_DIR=$HFTRAIN_TORCH_DIR" >&2; echo "$HFTRAIN_TORCH_DIR/share/cmake/Torch"; return
  fi
  local dir
  dir=$(venv_torch_dir)
  if [ -n "$dir" ] && grep -q 'PACKAGE_VERSION "2\.11\.' "$dir/TorchConfigVersion.cmake"; then
    say "LibTorch: present in .venv" >&2; echo "$dir"; return
  fi
  if [ ! -x "$root/.venv/bin/python" ]; then
    say "creating the virtual environment .venv" >&2
    python3 -m venv "$root/.venv" >&2
  fi
  say "installing the PyPI torch wheel ($torch_spec) into .venv" >&2
  local pip_args=()
  [ -n "${1:-}" ] && pip_args=(--no-index --find-links "$1")
  "$root/.venv/bin/pip" install -q "${pip_args[@]}" "$torch_spec" >&2
  venv_torch_dir
}

configure_and_build() {
  local torch_dir=$1
  shift
  [ -n "$torch_dir" ] || die "no LibTorch found (see the messages above)"
  # Configure when there is no build yet or when the set-up changed (another torch, bundle, flags);
  # otherwise leave it to the build, which re-runs cmake itself when a CMake file changed.
  local args=(-DCMAKE_BUILD_TYPE=Release -DTorch_DIR="$torch_dir" "$@")
  local stamp="$build_dir/.hftrain-setup-args"
  if [ ! -f "$build_dir/CMakeCache.txt" ] || [ "$(cat "$stamp" 2>/dev/null)" != "${args[*]}" ]; then
    say "configuring Release into ${build_dir#"$root"/}"
    cmake -S "$root" -B "$build_dir" -G Ninja "${args[@]}"
    printf '%s' "${args[*]}" > "$stamp"
  else
    say "build folder up to date: ${build_dir#"$root"/}"
  fi
  if [ "$do_build" = 1 ]; then
    say "building"
    cmake --build "$build_dir"
    say "done: $build_dir/apps/hftrain/hftrain"
  fi
}

case "$mode" in
  install)
    install_apt
    torch_dir=$(ensure_torch)
    # shellcheck disable=SC2086
    configure_and_build "$torch_dir" ${HFTRAIN_CMAKE_ARGS:-}
    ;;

  bundle)
    command -v apt-get >/dev/null || die "--bundle needs apt-get (run it on a Debian machine with a registry)"
    mkdir -p "$bundle/debs"
    bundle=$(cd "$bundle" && pwd)
    rm -f "$bundle"/debs/*.deb "$bundle/prefix/.unpacked"  # a fresh set, never mixed with an older one
    say "resolving the Debian packages the build needs (libraries and their dependencies)"
    sudo_cmd apt-get update -qq
    mapfile -t want < <(resolve_debs "${lib_pkgs[@]}" "${data_pkgs[@]}")
    say "downloading ${#want[@]} Debian packages into $bundle/debs"
    (cd "$bundle/debs" && apt-get download -qq "${want[@]}")
    if [ -n "${Torch_DIR:-}${HFTRAIN_TORCH_DIR:-}" ] || [ "${HFTRAIN_BUNDLE_REUSE_TORCH:-0}" = 1 ]; then
      say "not bundling wheels: the target reuses an installed PyTorch (HFTRAIN_TORCH_DIR)"
    else
      say "downloading the torch wheel and its dependencies into $bundle/wheels (several GB)"
      python3 -m pip download -q -d "$bundle/wheels" "$torch_spec"
    fi
    # The test suite's Python oracles, so that scripts/test.sh also runs offline (HFTRAIN_WHEELS).
    if [ "${HFTRAIN_BUNDLE_REUSE_TORCH:-0}" != 1 ]; then
      say "downloading the test oracles (tests/requirements-oracles.txt) into $bundle/wheels"
      python3 -m pip download -q -d "$bundle/wheels" -r "$root/tests/requirements-oracles.txt"
    fi
    du -sh "$bundle" | awk '{print "[setup] bundle size: " $1}'
    ;;

  from-bundle)
    [ -d "$bundle/debs" ] || die "$bundle is not a bundle made by --bundle (no debs/ folder)"
    bundle=$(cd "$bundle" && pwd)
    prefix="$bundle/prefix"
    if [ ! -f "$prefix/.unpacked" ]; then
      say "unpacking $(ls "$bundle"/debs/*.deb | wc -l) Debian packages into $prefix (no apt, no network)"
      rm -rf "$prefix"
      mkdir -p "$prefix"
      for deb in "$bundle"/debs/*.deb; do dpkg-deb -x "$deb" "$prefix"; done
      touch "$prefix/.unpacked"
    else
      say "bundle already unpacked in $prefix"
    fi
    if [ -z "${Torch_DIR:-}${HFTRAIN_TORCH_DIR:-}" ] && [ -d "$bundle/wheels" ]; then
      torch_dir=$(ensure_torch "$bundle/wheels")
    elif [ -z "${Torch_DIR:-}${HFTRAIN_TORCH_DIR:-}" ] && python3 -c 'import torch' 2>/dev/null; then
      HFTRAIN_TORCH_DIR=$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))')
      export HFTRAIN_TORCH_DIR
      torch_dir=$(ensure_torch)
    else
      torch_dir=$(ensure_torch /nonexistent)
    fi
    # Appended, not prepended: the bundle holds no toolchain, and its tools must not shadow the system's.
    export PATH="$PATH:$prefix/usr/bin"
    # Open MPI's wrappers and mpirun find their files through OPAL_PREFIX when relocated.
    export OPAL_PREFIX="$prefix/usr"
    configure_and_build "$torch_dir" \
      -DCMAKE_PREFIX_PATH="$prefix/usr" \
      -DCMAKE_INCLUDE_PATH="$prefix/usr/include" \
      -DMPI_CXX_COMPILER="$prefix/usr/bin/mpicxx.openmpi"
    ;;
esac
