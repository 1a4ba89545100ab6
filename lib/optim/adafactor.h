// Adafactor (Shazeer & Stern, 2018) as transformers.Adafactor computes it with the Hugging Face
// Trainer's arguments: an explicit lr (no relative step), optional parameter scaling, factored
// second moments for matrices, update clipping, optional first moment, decoupled weight decay.
#pragma once

#include "optim/optimizer.h"

namespace hftrain::optim {

std::unique_ptr<Optimizer> make_adafactor(std::vector<ParamGroup> groups, const config::AdafactorConfig& config);

}  // namespace hftrain::optim
