#include "util/env.h"

#include <algorithm>
#include <cstdlib>

extern char** environ;

namespace hftrain::util {
namespace {

class ProcessEnvironment : public Environment {
 public:
  std::optional<std::string> get(const std::string& name) const override {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  }
  std::vector<std::pair<std::string, std::string>> all() const override {
    std::vector<std::pair<std::string, std::string>> out;
    for (char** e = environ; e && *e; ++e) {
      std::string entry(*e);
      size_t eq = entry.find('=');
      if (eq == std::string::npos) continue;
      out.emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
    }
    std::sort(out.begin(), out.end());
    return out;
  }
};

}  // namespace

const Environment& Environment::process() {
  static const ProcessEnvironment env;
  return env;
}

std::optional<std::string> MapEnvironment::get(const std::string& name) const {
  auto it = vars_.find(name);
  if (it == vars_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::pair<std::string, std::string>> MapEnvironment::all() const {
  return {vars_.begin(), vars_.end()};
}

}  // namespace hftrain::util
