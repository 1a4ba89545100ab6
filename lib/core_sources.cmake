# The torch-free sources of lib/ (relative to lib/). Included by lib/CMakeLists.txt and by the
# clang/libFuzzer build in tests/fuzz/libfuzzer, which compiles the same files with sanitizers.
set(HFTRAIN_CORE_SOURCES
  util/env.cpp
  util/error.cpp
  util/file_writer.cpp
  util/fs.cpp
  util/hash.cpp
  util/json_depth.cpp
  util/log.cpp
  util/strings.cpp
  config/diagnostics.cpp
  config/emit.cpp
  config/interpolate.cpp
  config/keys.cpp
  config/node.cpp
  config/overrides.cpp
  config/recipe.cpp
  config/resolve.cpp
  config/rules.cpp
  config/schema.cpp
  config/data_sources.cpp
  config/units.cpp
  config/validate.cpp
  config/yaml_load.cpp
  optim/lr_schedule.cpp)
