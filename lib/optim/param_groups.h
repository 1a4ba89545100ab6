// Splits parameters into optimizer groups by name: per-glob learning rates and weight decay, and
// no weight decay on biases, norms and embeddings by default. Torch-free: works on names only.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace hftrain::optim {

struct GroupSettings {
  double lr = 0;
  double weight_decay = 0;
};

struct Grouping {
  std::vector<GroupSettings> groups;  // distinct settings, in order of first use
  std::vector<size_t> group_of;       // group index of each name, in the order given
};

// Throws ConfigError when a name matches two globs of the same map, or a glob matches no
// parameter (almost always a typo), listing the names it could have meant.
Grouping group_parameters(const std::vector<std::string>& names, const config::OptimizerConfig& config);

}  // namespace hftrain::optim
