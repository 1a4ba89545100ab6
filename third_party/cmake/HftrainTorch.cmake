# Locates LibTorch from the PyPI torch wheel and defines the target hftrain::torch.
#
# Where from, first match wins:
#   -DTorch_DIR=<...>/share/cmake/Torch, or the environment variable Torch_DIR
#   HFTRAIN_TORCH_DIR (CMake or environment): a torch package dir (.../site-packages/torch)
#   the project-local virtual environment .venv made by scripts/setup.sh
#
# The wheel is built with CUDA. Its TorchConfig.cmake calls find_package(CUDAToolkit REQUIRED),
# so on a machine without a CUDA toolkit find_package(Torch) fails outright. We therefore use
# TorchConfig.cmake only when a toolkit is present (HFTRAIN_WITH_CUDA=AUTO/ON) and otherwise link
# the CPU half of the wheel (libtorch_cpu + libc10) directly: the CUDA hooks are then never
# registered and torch::cuda::is_available() is false, which is exactly a CPU-only build.
set(HFTRAIN_MIN_TORCH_VERSION 2.11)

function(_hftrain_torch_dir_from_prefix prefix out)
  if(EXISTS "${prefix}/share/cmake/Torch/TorchConfig.cmake")
    set(${out} "${prefix}/share/cmake/Torch" PARENT_SCOPE)
  elseif(EXISTS "${prefix}/TorchConfig.cmake")
    set(${out} "${prefix}" PARENT_SCOPE)
  endif()
endfunction()

if(NOT Torch_DIR AND DEFINED ENV{Torch_DIR})
  set(Torch_DIR "$ENV{Torch_DIR}")
endif()
if(NOT Torch_DIR)
  if(NOT HFTRAIN_TORCH_DIR AND DEFINED ENV{HFTRAIN_TORCH_DIR})
    set(HFTRAIN_TORCH_DIR "$ENV{HFTRAIN_TORCH_DIR}")
  endif()
  if(HFTRAIN_TORCH_DIR)
    _hftrain_torch_dir_from_prefix("${HFTRAIN_TORCH_DIR}" Torch_DIR)
    if(NOT Torch_DIR)
      message(FATAL_ERROR "HFTRAIN_TORCH_DIR=${HFTRAIN_TORCH_DIR} holds no share/cmake/Torch/TorchConfig.cmake; "
                          "point it at the torch package folder (python3 -c 'import torch,os;print(os.path.dirname(torch.__file__))').")
    endif()
  else()
    file(GLOB _venv_torch "${CMAKE_SOURCE_DIR}/.venv/lib/python3*/site-packages/torch/share/cmake/Torch")
    list(SORT _venv_torch)
    list(GET _venv_torch -1 Torch_DIR)
  endif()
endif()
if(NOT Torch_DIR OR NOT EXISTS "${Torch_DIR}/TorchConfig.cmake")
  message(FATAL_ERROR "LibTorch not found. Run ./scripts/setup.sh, or pass -DTorch_DIR=<torch>/share/cmake/Torch "
                      "or set HFTRAIN_TORCH_DIR to a torch package folder.")
endif()
get_filename_component(HFTRAIN_TORCH_PREFIX "${Torch_DIR}/../../.." ABSOLUTE)
include("${Torch_DIR}/TorchConfigVersion.cmake")
set(Torch_VERSION "${PACKAGE_VERSION}")
if(Torch_VERSION VERSION_LESS HFTRAIN_MIN_TORCH_VERSION)
  message(FATAL_ERROR "LibTorch ${Torch_VERSION} at ${HFTRAIN_TORCH_PREFIX} is older than ${HFTRAIN_MIN_TORCH_VERSION}.")
endif()

# CUDA toolkit: the wheel's libraries need one at build time only for TorchConfig.cmake's checks.
set(HFTRAIN_HAVE_CUDA OFF)
if(NOT HFTRAIN_WITH_CUDA STREQUAL "OFF")
  if(NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(HFTRAIN_HAVE_CUDA ON)
  elseif(HFTRAIN_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "HFTRAIN_WITH_CUDA=ON but no CUDA toolkit was found (set CUDAToolkit_ROOT).")
  endif()
endif()

add_library(hftrain_torch_iface INTERFACE)
add_library(hftrain::torch ALIAS hftrain_torch_iface)
set(HFTRAIN_TORCH_LIBDIR "${HFTRAIN_TORCH_PREFIX}/lib")
if(HFTRAIN_HAVE_CUDA)
  # Caffe2's cuda.cmake still uses the old FindCUDA, which wants CUDA_TOOLKIT_ROOT_DIR.
  if(NOT CUDA_TOOLKIT_ROOT_DIR)
    get_filename_component(CUDA_TOOLKIT_ROOT_DIR "${CUDAToolkit_BIN_DIR}/.." ABSOLUTE)
  endif()
  # Without an arch list, Caffe2's cuda.cmake try_run()s a CUDA program to detect the local GPU,
  # which fails on GPU-less build machines (and under CMAKE_CXX_STANDARD 20). We compile no CUDA
  # of our own yet, so name the data-centre architectures and skip detection.
  if(NOT TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
    set(TORCH_CUDA_ARCH_LIST "8.0;9.0" CACHE STRING "CUDA architectures for hftrain's own kernels")
  endif()
  find_package(Torch REQUIRED CONFIG)
  target_link_libraries(hftrain_torch_iface INTERFACE ${TORCH_LIBRARIES})
  target_include_directories(hftrain_torch_iface SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
  # NCCL: from the toolkit install or from the wheel's nvidia-nccl package.
  find_path(HFTRAIN_NCCL_INCLUDE nccl.h HINTS "${CUDAToolkit_INCLUDE_DIRS}" "${HFTRAIN_TORCH_PREFIX}/../nvidia/nccl/include")
  if(HFTRAIN_NCCL_INCLUDE)
    set(HFTRAIN_HAVE_NCCL ON)
  else()
    set(HFTRAIN_HAVE_NCCL OFF)
  endif()
else()
  set(HFTRAIN_HAVE_NCCL OFF)
  foreach(_lib torch_cpu c10)
    find_library(HFTRAIN_LIB_${_lib} ${_lib} PATHS "${HFTRAIN_TORCH_LIBDIR}" NO_DEFAULT_PATH REQUIRED)
    target_link_libraries(hftrain_torch_iface INTERFACE "${HFTRAIN_LIB_${_lib}}")
  endforeach()
  target_include_directories(hftrain_torch_iface SYSTEM INTERFACE
    "${HFTRAIN_TORCH_PREFIX}/include" "${HFTRAIN_TORCH_PREFIX}/include/torch/csrc/api/include")
  target_compile_options(hftrain_torch_iface INTERFACE -D_GLIBCXX_USE_CXX11_ABI=1)
endif()
# The wheel's libtorch.so exports its own copies of std::filesystem functions (remove_all,
# permissions, copy_symlink, ...) that crash when called from outside it: a std::filesystem::remove_all
# in our code bound to libtorch.so's copy and jumped to address 0. The dynamic linker binds each
# symbol to the first library in DT_NEEDED order, and g++ adds libstdc++ last, after libtorch.
# Naming libstdc++ first on the link line puts it ahead of libtorch, so the C++ runtime's own
# definitions win everywhere.
# `-l:libstdc++.so.6`, not `-lstdc++`: a compiler whose own folder holds only libstdc++.a (a
# relocated GCC, as on the lent GPU machines) resolves `-lstdc++` to the archive, which at the front
# of the line contributes nothing (no symbol is undefined yet), and libtorch.so's copies win again.
target_link_options(hftrain_torch_iface INTERFACE "LINKER:--push-state,--no-as-needed" "-l:libstdc++.so.6" "LINKER:--pop-state")

# Executables find the wheel's libraries through their RUNPATH, so nothing needs LD_LIBRARY_PATH.
set(CMAKE_BUILD_RPATH "${HFTRAIN_TORCH_LIBDIR}")
set(CMAKE_INSTALL_RPATH "${HFTRAIN_TORCH_LIBDIR}")
