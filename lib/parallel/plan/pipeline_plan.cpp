#include "parallel/plan/pipeline_plan.h"

#include "parallel/plan/memory_plan.h"

namespace hftrain::parallel {

std::vector<StagePlan> plan_stages(const ActivationShape& shape, const std::vector<int64_t>& boundaries,
                                   const std::vector<int64_t>& layer_params, int64_t first_extra, int64_t last_extra,
                                   int64_t last_copy, PipelineSchedule schedule, int micro_batches) {
  std::vector<StagePlan> out;
  const int stages = static_cast<int>(boundaries.size()) - 1;
  for (int s = 0; s < stages; ++s) {
    StagePlan p;
    p.first_layer = boundaries[static_cast<size_t>(s)];
    p.end_layer = boundaries[static_cast<size_t>(s) + 1];
    for (int64_t i = p.first_layer; i < p.end_layer; ++i) p.parameters += layer_params[static_cast<size_t>(i)];
    if (s == 0) p.parameters += first_extra;
    if (s + 1 == stages) {
      p.parameters += last_extra;
      p.copy = last_copy;
    }
    p.in_flight = activations_in_flight(stage_schedule(schedule, s, stages, micro_batches));
    ActivationShape mine = shape;
    mine.n_layer = p.end_layer - p.first_layer;
    const ActivationEstimate e = estimate_activations(mine);
    // Each micro-batch in flight keeps its blocks' tensors (and its document mask); the output
    // layer's are the last stage's alone.
    p.activations = static_cast<double>(p.in_flight) * (e.blocks + e.mask + (s + 1 == stages ? e.head : 0.0));
    out.push_back(p);
  }
  return out;
}

std::string pipeline_summary(const std::vector<StagePlan>& stages, PipelineSchedule schedule, int micro_batches) {
  std::string out = "pipeline parallel " + std::to_string(stages.size()) + " (" +
                    (schedule == PipelineSchedule::kGpipe ? "gpipe" : "1f1b") + ", " + std::to_string(micro_batches) +
                    (micro_batches == 1 ? " micro-batch" : " micro-batches") + " a step):\n";
  for (size_t s = 0; s < stages.size(); ++s) {
    const StagePlan& p = stages[s];
    out += "  stage " + std::to_string(s) + ": blocks " + std::to_string(p.first_layer) + "-" +
           std::to_string(p.end_layer - 1) + ", Ψ = " + std::to_string(p.parameters) +
           (p.copy ? " (+ " + std::to_string(p.copy) + " held: the tied embedding's copy, 4 bytes each and its gradient)"
                   : std::string()) +
           ", activations of " +
           std::to_string(p.in_flight) + " micro-batch" + (p.in_flight == 1 ? "" : "es") + " at once = " +
           format_bytes(p.activations) + "\n";
  }
  return out;
}

}  // namespace hftrain::parallel
