// Pipeline parallelism's view of one model: which blocks this stage holds (one group of consecutive
// blocks, or with virtual stages one group per chunk), and whether it is the first (embeddings) or
// the last (final norm, head and loss). The stage's forward, the schedules and the transfers
// between stages live in parallel/pipeline and train/pipeline_runner; the model only computes its
// part.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hftrain::model {

struct PipelineStage {
  int stage = 0;
  int stages = 1;
  int chunks = 1;  // virtual stages per stage: chunk c is virtual stage c * stages + stage
  std::vector<int64_t> boundaries;  // the virtual stages' blocks: stages * chunks + 1 indices from 0 to n_layer
  int virtual_stage(int chunk) const { return chunk * stages + stage; }
  // Chunk `chunk`'s blocks [first_layer, end_layer).
  int64_t first_layer(int chunk) const { return boundaries[static_cast<size_t>(virtual_stage(chunk))]; }
  int64_t end_layer(int chunk) const { return boundaries[static_cast<size_t>(virtual_stage(chunk)) + 1]; }
  bool first() const { return stage == 0; }  // holds the embeddings (in its chunk 0)
  bool last() const { return stage + 1 == stages; }  // holds the final norm and head (in its last chunk)
  // Whether chunk `chunk` begins with the embeddings, or ends with the head.
  bool embeds(int chunk) const { return virtual_stage(chunk) == 0; }
  bool heads(int chunk) const { return virtual_stage(chunk) + 1 == stages * chunks; }
  // This stage's blocks, in order.
  std::vector<int64_t> layers() const {
    std::vector<int64_t> out;
    for (int c = 0; c < chunks; ++c) {
      for (int64_t i = first_layer(c); i < end_layer(c); ++i) out.push_back(i);
    }
    return out;
  }
};

// The stage (0 .. stages - 1) that holds parameter `name` of a decoder split at `boundaries`
// (stages * chunks + 1 block indices): a block's parameter by its block's virtual stage, the
// embeddings on the first stage, the final norm and head on the last. A tied embedding belongs
// to the first stage (the last holds a copy).
int stage_of_parameter(const std::string& name, const std::vector<int64_t>& boundaries, int stages);

}  // namespace hftrain::model
