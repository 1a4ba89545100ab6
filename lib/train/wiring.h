// From the resolved config to each stage's own options: the one place that knows both sides.
#pragma once

#include <torch/types.h>

#include "config/config.h"
#include "data/loader.h"
#include "data/tokenizer.h"

namespace hftrain::train {

data::TokenizerOptions tokenizer_options(const config::Config& config);
// `rank` of `world_size`: which slice of each global batch this process loads.
data::DataOptions data_options(const config::Config& config, int rank = 0, int world_size = 1);
// trainer.device: auto picks CUDA when visible, device `local_rank` (one process per GPU).
// Throws ConfigError for cuda without a GPU, or fewer GPUs than local processes.
torch::Device pick_device(const config::Config& config, int local_rank = 0);

}  // namespace hftrain::train
