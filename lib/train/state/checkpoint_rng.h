// The random generators' states in a checkpoint (rng.safetensors): every rank's, gathered to rank
// 0 (its own under "cpu", "cuda", and tensor parallelism's own stream; rank r's with ".rank<r>"),
// and set back on resume after checks that keep LibTorch's internals out of the message.
#pragma once

#include <filesystem>

#include <torch/types.h>

#include "model/weights/safetensors.h"
#include "parallel/comm/world.h"

namespace hftrain::train {

// This rank's generator states out of a checkpoint's: its own where the saving job had this
// rank, else none (the caller then seeds afresh).
model::TensorList rank_rng_states(const model::TensorList& saved, int rank);
// This process's generator states (CPU, the device's CUDA generator, tensor parallelism's stream).
model::TensorList rng_states(const torch::Device& device);
// Sets the generators from `states` (one rank's); throws CheckpointError naming `file` for a state
// that does not fit this build.
void restore_rng(const model::TensorList& states, const torch::Device& device, const std::filesystem::path& file);
// Every rank's generator states, as rank 0 writes them (collective).
model::TensorList gather_rng_states(parallel::World& world, const torch::Device& device);

}  // namespace hftrain::train
