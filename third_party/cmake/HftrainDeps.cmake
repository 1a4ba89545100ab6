# The Debian-packaged dependencies. scripts/setup.sh --from-bundle unpacks the same packages into a
# prefix and passes it as CMAKE_PREFIX_PATH, so these calls work unchanged on air-gapped machines.
find_package(yaml-cpp REQUIRED CONFIG)
find_package(CLI11 REQUIRED CONFIG)
find_package(fmt REQUIRED CONFIG)
find_package(spdlog REQUIRED CONFIG)
find_package(nlohmann_json 3.10 REQUIRED CONFIG)
# nlohmann-json is header-only and is used next to LibTorch too. Its include directory is the
# Debian prefix's usr/include, which also holds Debian's fmt 9 (the clash CONTRIBUTING.md
# explains), so the torch targets get a folder of their own holding only a link to nlohmann/.
get_target_property(_hftrain_json_dirs nlohmann_json::nlohmann_json INTERFACE_INCLUDE_DIRECTORIES)
find_path(_hftrain_json_root nlohmann/json.hpp PATHS ${_hftrain_json_dirs} NO_DEFAULT_PATH)
if(NOT _hftrain_json_root)
  find_path(_hftrain_json_root nlohmann/json.hpp REQUIRED)
endif()
set(HFTRAIN_JSON_ONLY_INCLUDE_DIR ${CMAKE_BINARY_DIR}/include-json-only)
file(MAKE_DIRECTORY ${HFTRAIN_JSON_ONLY_INCLUDE_DIR})
file(CREATE_LINK ${_hftrain_json_root}/nlohmann ${HFTRAIN_JSON_ONLY_INCLUDE_DIR}/nlohmann SYMBOLIC)
# xxHash (checksums) is used header-only (XXH_INLINE_ALL in util/hash.cpp): nothing to link.
# PCRE2 (Debian libpcre2-dev): the Split pre-tokenizer regexes of Hugging Face tokenizer.json
# files. Linked statically, so the binary needs nothing more at run time.
find_path(HFTRAIN_PCRE2_INCLUDE_DIR pcre2.h)
find_library(HFTRAIN_PCRE2_LIBRARY NAMES libpcre2-8.a pcre2-8)
if(NOT HFTRAIN_PCRE2_INCLUDE_DIR OR NOT HFTRAIN_PCRE2_LIBRARY)
  message(FATAL_ERROR "PCRE2 not found: install Debian's libpcre2-dev (scripts/setup.sh does)")
endif()

find_path(HFTRAIN_XXHASH_INCLUDE_DIR xxhash.h)
if(NOT HFTRAIN_XXHASH_INCLUDE_DIR)
  message(FATAL_ERROR "xxhash.h not found: install the Debian package libxxhash-dev "
                      "(scripts/setup.sh does), or pass -DHFTRAIN_XXHASH_INCLUDE_DIR=<dir>")
endif()
# libcurl (Debian libcurl4-openssl-dev): the HTTP client of the experiment trackers (MLflow's REST
# API, lib/metrics/http_client.cpp), HTTPS included.
find_package(CURL 7.68 REQUIRED)
if(HFTRAIN_BUILD_TESTS)
  find_package(Catch2 REQUIRED CONFIG)
endif()

# yaml-cpp 0.7's exported target is the plain name "yaml-cpp"; later releases add yaml-cpp::yaml-cpp.
if(TARGET yaml-cpp::yaml-cpp)
  set(HFTRAIN_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(HFTRAIN_YAML_TARGET yaml-cpp)
endif()

# Only MPI's C API is used; skip the deprecated C++ bindings.
set(MPI_CXX_SKIP_MPICXX ON CACHE BOOL "")
# Open MPI is required: the CPU backend of multi-process training (lib/parallel/comm/mpi_communicator.cpp).
find_package(MPI REQUIRED COMPONENTS CXX)
set(HFTRAIN_HAVE_MPI ON)
