// NEFTune (Jain et al., 2023, "NEFTune: Noisy Embeddings Improve Instruction Finetuning"), as
// transformers' neftune_post_forward_hook adds it to the input embeddings' output while training:
// noise uniform in +-alpha / sqrt(T C), T the batch's (padded) length and C the embedding width,
// drawn from torch's global generator (so dropout's seeding and checkpointed RNG state cover it).
#pragma once

#include <cstdint>

#include <torch/types.h>

namespace hftrain::model {

// `embeddings` (B, t, C) plus the noise. Under sequence parallelism a rank holds t = T / size
// positions from `offset`: the noise is drawn for all T positions (the same numbers on every rank
// of the group) and cut to the rank's, so that the sum equals one rank's.
torch::Tensor add_neftune_noise(const torch::Tensor& embeddings, double alpha, int64_t seq_len, int64_t offset = 0);

}  // namespace hftrain::model
