// Fuzz target for the recipe loader: YAML text -> tree -> overrides -> interpolation ->
// validation -> emitted YAML, which must resolve again to the same text. Any util::Error is a
// correct answer to bad input; every other exception, crash, hang or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

#include "config/emit.h"
#include "config/resolve.h"
#include "util/env.h"
#include "util/error.h"
#include "util/strings.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hftrain;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  // Lines before a line "---overrides" are the recipe; lines after it are overrides.
  std::string recipe(input);
  std::vector<std::string> overrides;
  if (size_t cut = input.find("\n---overrides\n"); cut != std::string_view::npos) {
    recipe = std::string(input.substr(0, cut));
    for (auto& line : util::split(input.substr(cut + 14), '\n')) {
      if (!line.empty()) overrides.push_back(line);
    }
  }
  const util::MapEnvironment env({{"HFTRAIN_FUZZ_VAR", "7"}});
  try {
    auto resolved = config::resolve_yaml_text(recipe, "fuzz.yaml", overrides, env);
    const auto& schema = config::product_schema();
    std::string yaml = config::to_yaml(resolved, schema, false);
    auto again = config::resolve_yaml_text(yaml, "fuzz-emitted.yaml", {}, env);
    if (config::to_yaml(again, schema, false) != yaml) {
      std::cerr << "emitted config does not round-trip:\n" << yaml;
      std::abort();
    }
    (void)config::to_json(resolved, schema, true);
  } catch (const util::Error&) {
    // A clean rejection.
  }
  return 0;
}
