// Shared helpers for the config tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "config/resolve.h"
#include "util/env.h"
#include "util/error.h"

namespace hftrain::test {

// A fresh temporary folder per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("hftrain-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    auto p = path_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::filesystem::path path_;
};

// Resolves recipe text with a controlled environment.
inline config::ResolvedConfig resolve(const std::string& yaml, std::vector<std::string> overrides = {},
                                      const util::Environment& env = util::MapEnvironment()) {
  return config::resolve_yaml_text(yaml, "recipe.yaml", overrides, env);
}

// The ConfigError message that resolving produces; fails the test when it resolves cleanly.
inline std::string resolve_error(const std::string& yaml, std::vector<std::string> overrides = {},
                                 const util::Environment& env = util::MapEnvironment()) {
  try {
    resolve(yaml, overrides, env);
  } catch (const util::ConfigError& e) {
    return e.what();
  }
  FAIL("expected a ConfigError");
  return {};
}

// Data sources that are bare paths, as data.train lists them.
inline std::vector<config::DataSource> paths_of(const std::vector<std::string>& paths) {
  std::vector<config::DataSource> out(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) out[i].path = paths[i];
  return out;
}

inline constexpr const char* kMinimal = "trainer:\n  max_steps: 100\n";

}  // namespace hftrain::test
