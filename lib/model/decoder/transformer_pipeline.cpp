// The decoder as a pipeline stage (TransformerImpl::pipeline_split and what goes with it): which
// parameters a stage owns, the others kept registered without storage, the whole model present
// for a save or load, and the stage's part of the forward.
#include <torch/torch.h>

#include "model/decoder/blocks.h"
#include "model/decoder/lm_head_loss.h"
#include "model/numeric_trace.h"
#include "model/decoder/transformer.h"

namespace hftrain::model {

bool TransformerImpl::owns(const std::string& name) const {
  if (stage_.stages == 1 || whole_) return true;
  return stage_of_parameter(name, stage_.boundaries, stage_.stages) == stage_.stage;
}

int stage_of_parameter(const std::string& name, const std::vector<int64_t>& boundaries, int stages) {
  const int virtual_stages = static_cast<int>(boundaries.size()) - 1;
  if (name.rfind("layers.", 0) == 0) {
    const int64_t layer = std::stoll(name.substr(7, name.find('.', 7) - 7));
    for (int v = 0; v < virtual_stages; ++v) {
      if (layer < boundaries[static_cast<size_t>(v) + 1]) return v % stages;
    }
    return stages - 1;
  }
  if (name.rfind("embed_", 0) == 0) return 0;
  return stages - 1;  // final_norm, lm_head
}

void TransformerImpl::pipeline_split(const std::vector<int64_t>& boundaries, int stage, int stages) {
  if (stages <= 1) return;
  const int virtual_stages = static_cast<int>(boundaries.size()) - 1;
  TORCH_CHECK(stage_.stages == 1 && !tp_, "pipeline_split: once, before tensor_parallelize");
  TORCH_CHECK(stage >= 0 && stage < stages && virtual_stages % stages == 0 && boundaries.front() == 0 &&
                  boundaries.back() == spec_.n_layer,
              "pipeline_split: bad boundaries");
  for (size_t s = 0; s + 1 < boundaries.size(); ++s) {
    TORCH_CHECK(boundaries[s] < boundaries[s + 1], "pipeline_split: a stage without blocks");
  }
  stage_ = PipelineStage{stage, stages, virtual_stages / stages, boundaries};
  torch::NoGradGuard no_grad;
  for (const auto& item : named_parameters(/*recurse=*/true)) {
    const std::string& name = item.key();
    torch::Tensor p = item.value();
    if (owns(name) || is_tied_copy(name)) continue;
    absent_.emplace_back(p, p.sizes().vec());
    p.set_data(torch::empty({0}, p.options()));
  }
}

bool TransformerImpl::is_tied_copy(const std::string& name) const {
  return spec_.tie_embeddings && stage_.stages > 1 && stage_.last() && name == "embed_tokens.weight";
}

torch::Tensor TransformerImpl::tied_head_copy() const {
  return spec_.tie_embeddings && stage_.stages > 1 && stage_.last() ? embed_tokens_->weight : torch::Tensor();
}

void TransformerImpl::set_pipeline_whole(bool whole) {
  if (stage_.stages == 1 || whole == whole_) return;
  torch::NoGradGuard no_grad;
  const torch::Tensor copy = tied_head_copy();
  if (whole) {
    // In host memory: a stage's device holds its own parameters and state, not the whole model.
    const auto host = [](const torch::Tensor& p) { return p.options().device(torch::kCPU); };
    for (auto& [p, shape] : absent_) p.set_data(torch::empty(shape, host(p)));
    if (copy.defined()) {  // the whole embedding in its place (a tensor-parallel copy is a piece)
      held_copy_ = copy.detach();
      torch::Tensor(copy).set_data(torch::empty(embedding_shape(), host(copy)));
    }
  } else {
    for (auto& [p, shape] : absent_) p.set_data(torch::empty({0}, p.options()));
    if (copy.defined()) torch::Tensor(copy).set_data(held_copy_);
    held_copy_ = torch::Tensor();
  }
  whole_ = whole;
}

torch::Tensor TransformerImpl::stage_forward(const torch::Tensor& input_ids, const torch::Tensor& hidden,
                                             const torch::Tensor& labels, double label_smoothing,
                                             const torch::Tensor& position_ids, int chunk) {
  TORCH_CHECK(stage_.stages > 1 && chunk >= 0 && chunk < stage_.chunks, "stage_forward: the model is not pipelined");
  const int64_t T = input_ids.size(1);
  TORCH_CHECK(T <= spec_.max_seq_len, "sequence of ", T, " positions exceeds model.max_seq_len ", spec_.max_seq_len);
  if (hooks_) hooks_->before_forward(0);
  router_stats_.clear();
  torch::Tensor x = stage_.embeds(chunk) ? embed(input_ids, 0, position_ids) : hidden;
  const auto [attention, sliding] = attention_inputs(position_ids, T, 0, x.scalar_type(), x.device());
  x = run_blocks(x, *attention, *sliding, nullptr, 0, input_ids.numel(), stage_.first_layer(chunk),
                 stage_.end_layer(chunk));
  if (!stage_.heads(chunk)) return hooks_ ? hooks_->after_forward(0, x) : x;
  x = traced("final_norm", final_norm_.get(), x, final_norm_->as<NormImpl>()->forward(x));
  if (tp_) x = tp_enter(x, *tp_);
  auto loss = lm_head_loss_sum(x.reshape({-1, x.size(-1)}), head_weight(), labels.reshape({-1}), label_smoothing,
                               spec_.final_logit_softcapping, 0, tp_ ? &vocab_ : nullptr);
  traced_head(x, loss);
  return hooks_ ? hooks_->after_forward(0, loss) : loss;
}

}  // namespace hftrain::model
