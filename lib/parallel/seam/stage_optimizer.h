// Pipeline parallelism's part of a checkpoint's optimizer state: each stage saves the state of its
// own parameters, under groups that name every stage's, and reads back its own parameters' alone.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/types.h>

#include "parallel/comm/communicator.h"
#include "parallel/data_parallel/optimizer_pieces.h"

namespace hftrain::parallel {

// This stage's optimizer meta with every stage's parameters in its groups (collective over the
// pipeline), as a checkpoint records it; the groups' other fields are this stage's (alike on all).
nlohmann::json pipeline_optimizer_meta(const nlohmann::json& meta, Communicator& pipeline, const torch::Device& device);

// A saved optimizer state as one pipeline stage sees it: the tensors (and step counts) of the
// parameters in `params` alone; the other stages' are left out.
std::unique_ptr<SavedOptimizerState> stage_optimizer_state(const SavedOptimizerState& saved,
                                                           const std::vector<std::string>& params);

}  // namespace hftrain::parallel
