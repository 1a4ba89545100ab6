#include "optim/param_groups.h"

#include <fnmatch.h>

#include <map>
#include <optional>
#include <set>

#include "util/error.h"
#include "util/strings.h"

namespace hftrain::optim {
namespace {

bool matches(const std::string& glob, const std::string& name) {
  return ::fnmatch(glob.c_str(), name.c_str(), 0) == 0;
}

// The value of the one glob in `map` that matches `name`, if any.
std::optional<double> lookup(const std::map<std::string, double>& map, const std::string& name,
                             const char* key, std::set<std::string>& used) {
  std::optional<double> found;
  std::string found_glob;
  for (const auto& [glob, value] : map) {
    if (!matches(glob, name)) continue;
    if (found) {
      throw util::ConfigError("parameter `" + name + "` matches two globs of `" + std::string(key) + "`: '" +
                                  found_glob + "' and '" + glob + "'",
                              "make the globs disjoint");
    }
    found = value;
    found_glob = glob;
    used.insert(glob);
  }
  return found;
}

void check_all_used(const std::map<std::string, double>& map, const std::set<std::string>& used,
                    const char* key, const std::vector<std::string>& names) {
  for (const auto& [glob, value] : map) {
    if (used.count(glob)) continue;
    std::vector<std::string> sample(names.begin(),
                                    names.begin() + static_cast<long>(std::min<size_t>(names.size(), 6)));
    throw util::ConfigError("`" + std::string(key) + "` glob '" + glob + "' matches no parameter",
                            "parameter names look like: " + util::join(sample, ", "));
  }
}

}  // namespace

Grouping group_parameters(const std::vector<std::string>& names, const config::OptimizerConfig& config) {
  Grouping out;
  std::set<std::string> used_lr;
  std::set<std::string> used_wd;
  for (const auto& name : names) {
    GroupSettings s;
    s.lr = lookup(config.group_lr, name, "optimizer.group_lr", used_lr).value_or(config.lr);
    if (auto wd = lookup(config.group_weight_decay, name, "optimizer.group_weight_decay", used_wd)) {
      s.weight_decay = *wd;
    } else {
      bool exempt = false;
      for (const auto& glob : config.no_decay) exempt = exempt || matches(glob, name);
      s.weight_decay = exempt ? 0.0 : config.weight_decay;
    }
    size_t index = out.groups.size();
    for (size_t g = 0; g < out.groups.size(); ++g) {
      if (out.groups[g].lr == s.lr && out.groups[g].weight_decay == s.weight_decay) index = g;
    }
    if (index == out.groups.size()) out.groups.push_back(s);
    out.group_of.push_back(index);
  }
  check_all_used(config.group_lr, used_lr, "optimizer.group_lr", names);
  check_all_used(config.group_weight_decay, used_wd, "optimizer.group_weight_decay", names);
  return out;
}

}  // namespace hftrain::optim
