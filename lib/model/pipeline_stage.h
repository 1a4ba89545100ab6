// Pipeline parallelism's view of one model: which consecutive blocks this stage holds, and
// whether it is the first (embeddings) or the last (final norm, head and loss). The stage's
// forward, the schedules and the transfers between stages live in parallel/pipeline and
// train/pipeline_runner; the model only computes its part.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hftrain::model {

struct PipelineStage {
  int stage = 0;
  int stages = 1;
  int64_t first_layer = 0;  // the blocks [first_layer, end_layer)
  int64_t end_layer = 0;
  bool first() const { return stage == 0; }
  bool last() const { return stage + 1 == stages; }
  bool holds_layer(int64_t layer) const { return layer >= first_layer && layer < end_layer; }
};

// The stage (0 .. stages - 1) that holds parameter `name` of a decoder split at `boundaries`
// (stages + 1 block indices): a block's parameter by its block, the embeddings on the first stage,
// the final norm and head on the last. A tied embedding belongs to the first stage (the last holds
// a copy).
int stage_of_parameter(const std::string& name, const std::vector<int64_t>& boundaries);

}  // namespace hftrain::model
