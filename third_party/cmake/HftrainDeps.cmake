# The Debian-packaged dependencies. scripts/setup.sh --from-bundle unpacks the same packages into a
# prefix and passes it as CMAKE_PREFIX_PATH, so these calls work unchanged on air-gapped machines.
find_package(yaml-cpp REQUIRED CONFIG)
find_package(CLI11 REQUIRED CONFIG)
find_package(fmt REQUIRED CONFIG)
find_package(spdlog REQUIRED CONFIG)
find_package(nlohmann_json 3.10 REQUIRED CONFIG)
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
find_package(MPI COMPONENTS CXX QUIET)
if(MPI_CXX_FOUND)
  set(HFTRAIN_HAVE_MPI ON)
else()
  set(HFTRAIN_HAVE_MPI OFF)
endif()
