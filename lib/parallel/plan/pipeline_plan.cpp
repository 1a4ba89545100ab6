#include "parallel/plan/pipeline_plan.h"

#include <algorithm>

#include "parallel/plan/memory_plan.h"

namespace hftrain::parallel {

std::vector<StagePlan> plan_stages(const ActivationShape& shape, const std::vector<int64_t>& boundaries,
                                   const std::vector<int64_t>& layer_params, int64_t first_extra, int64_t last_extra,
                                   int64_t last_copy, PipelineSchedule schedule, int micro_batches, int chunks) {
  std::vector<StagePlan> out;
  const int stages = (static_cast<int>(boundaries.size()) - 1) / chunks;
  for (int s = 0; s < stages; ++s) {
    StagePlan p;
    std::vector<double> chunk_bytes;  // one micro-batch's activations through each chunk
    for (int c = 0; c < chunks; ++c) {
      const auto v = static_cast<size_t>(c * stages + s);
      const bool head = v + 2 == boundaries.size();
      p.blocks.emplace_back(boundaries[v], boundaries[v + 1]);
      for (int64_t i = boundaries[v]; i < boundaries[v + 1]; ++i) p.parameters += layer_params[static_cast<size_t>(i)];
      ActivationShape mine = shape;
      mine.n_layer = boundaries[v + 1] - boundaries[v];
      const ActivationEstimate e = estimate_activations(mine);
      // Each micro-batch in flight keeps its blocks' tensors (and its document mask); the output
      // layer's are the last virtual stage's alone.
      chunk_bytes.push_back(e.blocks + e.mask + (head ? e.head : 0.0));
    }
    if (s == 0) p.parameters += first_extra;
    if (s + 1 == stages) {
      p.parameters += last_extra;
      p.copy = last_copy;
    }
    const auto ops = stage_schedule(schedule, s, stages, micro_batches, chunks);
    p.in_flight = activations_in_flight(ops);
    double held = 0;
    for (const PipelineOp& op : ops) {
      held += (op.forward ? 1.0 : -1.0) * chunk_bytes[static_cast<size_t>(op.chunk)];
      p.activations = std::max(p.activations, held);
    }
    out.push_back(p);
  }
  return out;
}

std::string pipeline_summary(const std::vector<StagePlan>& stages, PipelineSchedule schedule, int micro_batches,
                             int chunks) {
  std::string out = "pipeline parallel " + std::to_string(stages.size()) + " (" +
                    (schedule == PipelineSchedule::kGpipe ? "gpipe" : "1f1b") +
                    (chunks > 1 ? " interleaved over " + std::to_string(chunks) + " virtual stages" : std::string()) +
                    ", " + std::to_string(micro_batches) + (micro_batches == 1 ? " micro-batch" : " micro-batches") +
                    " a step):\n";
  for (size_t s = 0; s < stages.size(); ++s) {
    const StagePlan& p = stages[s];
    std::string blocks;
    for (const auto& [first, end] : p.blocks) {
      blocks += (blocks.empty() ? "" : ", ") + std::to_string(first) + "-" + std::to_string(end - 1);
    }
    const bool one = p.in_flight == 1;
    const std::string unit = chunks > 1 ? (one ? " (chunk, micro-batch) pair" : " (chunk, micro-batch) pairs")
                                        : (one ? " micro-batch" : " micro-batches");
    out +=
        "  stage " + std::to_string(s) + ": blocks " + blocks + ", Ψ = " + std::to_string(p.parameters) +
        (p.copy ? " (+ " + std::to_string(p.copy) + " held: the tied embedding's copy, 4 bytes each and its gradient)"
                : std::string()) +
        ", activations of " + std::to_string(p.in_flight) + unit + " at once = " + format_bytes(p.activations) + "\n";
  }
  return out;
}

}  // namespace hftrain::parallel
