// From the resolved config to each stage's own options: the one place that knows both sides.
#pragma once

#include <torch/types.h>

#include "config/config.h"
#include "data/loader.h"
#include "data/tokenizer.h"

namespace hftrain::train {

data::TokenizerOptions tokenizer_options(const config::Config& config);
data::DataOptions data_options(const config::Config& config);
// trainer.device: auto picks CUDA when visible. Throws ConfigError for cuda without a GPU.
torch::Device pick_device(const config::Config& config);

}  // namespace hftrain::train
