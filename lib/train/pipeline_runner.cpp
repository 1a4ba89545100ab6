#include "train/pipeline_runner.h"

#include <torch/torch.h>

#include "model/pipeline_stage.h"
#include "train/pipeline_setup.h"
#include "train/precision.h"

namespace hftrain::train {
namespace {

constexpr const char* kEmbedding = "embed_tokens.weight";

class StageState final : public parallel::SavedOptimizerState {
 public:
  StageState(const parallel::SavedOptimizerState& saved, const std::vector<std::string>& params)
      : saved_(saved), meta_(saved.meta()) {
    const std::set<std::string> keep(params.begin(), params.end());
    for (const std::string& name : saved.names()) {
      if (keep.count(name.substr(0, name.rfind('/')))) names_.push_back(name);
    }
    // The optimizer's groups list every stage's parameters (pipeline_optimizer_meta): this stage's.
    if (meta_.is_object() && meta_.contains("groups") && meta_["groups"].is_array()) {
      for (auto& group : meta_["groups"]) {
        if (!group.is_object() || !group.contains("params") || !group["params"].is_array()) continue;
        nlohmann::json kept = nlohmann::json::array();
        for (const auto& name : group["params"]) {
          if (name.is_string() && keep.count(name.get<std::string>())) kept.push_back(name);
        }
        group["params"] = std::move(kept);
      }
    }
    if (meta_.is_object() && meta_.contains("steps") && meta_["steps"].is_object()) {
      nlohmann::json steps = nlohmann::json::object();
      for (const auto& [name, count] : meta_["steps"].items()) {
        if (keep.count(name)) steps[name] = count;
      }
      meta_["steps"] = std::move(steps);
    }
  }
  const nlohmann::json& meta() const override { return meta_; }
  std::string source() const override { return saved_.source(); }
  std::vector<std::string> names() const override { return names_; }
  std::vector<int64_t> shape(const std::string& name) const override { return saved_.shape(name); }
  torch::Tensor read(const std::string& name, int64_t offset, int64_t count) const override {
    return saved_.read(name, offset, count);
  }

 private:
  const parallel::SavedOptimizerState& saved_;
  nlohmann::json meta_;
  std::vector<std::string> names_;  // sorted, as the saved state's
};

}  // namespace

nlohmann::json pipeline_optimizer_meta(const nlohmann::json& meta, parallel::Communicator& pipeline,
                                       const torch::Device& device) {
  const std::vector<std::string> all = parallel::all_gather_text(pipeline, meta.dump(), device);
  nlohmann::json merged = meta;
  if (!merged.is_object() || !merged.contains("groups") || !merged["groups"].is_array()) return merged;
  // Each stage numbers its groups by the order its own parameters meet them: the groups are
  // matched by their settings (a group's schedule-free state, when there is one, goes with it).
  const bool schedule_free = merged.contains("schedule_free") && merged["schedule_free"].is_array();
  nlohmann::json groups = nlohmann::json::array(), free_state = nlohmann::json::array();
  for (const std::string& text : all) {  // in stage order: the whole model's order within a group
    const nlohmann::json stage = nlohmann::json::parse(text);
    const nlohmann::json& stage_groups = stage.at("groups");
    for (size_t g = 0; g < stage_groups.size(); ++g) {
      const nlohmann::json& group = stage_groups[g];
      size_t at = groups.size();
      for (size_t k = 0; k < groups.size(); ++k) {
        if (groups[k].at("base_lr") == group.at("base_lr") &&
            groups[k].at("weight_decay") == group.at("weight_decay")) {
          at = k;
        }
      }
      if (at == groups.size()) {
        nlohmann::json fresh = group;
        fresh["params"] = nlohmann::json::array();
        groups.push_back(std::move(fresh));
        if (schedule_free) free_state.push_back(stage.at("schedule_free").at(g));
      }
      for (const auto& name : group.at("params")) groups[at]["params"].push_back(name);
    }
  }
  merged["groups"] = std::move(groups);
  if (schedule_free) merged["schedule_free"] = std::move(free_state);
  return merged;
}

std::unique_ptr<parallel::SavedOptimizerState> stage_optimizer_state(const parallel::SavedOptimizerState& saved,
                                                                     const std::vector<std::string>& params) {
  return std::make_unique<StageState>(saved, params);
}

PipelineRunner::PipelineRunner(TaskModel& model, parallel::World& world, const config::Config& config,
                               const torch::Device& device, model::UnitHooks* hooks)
    : model_(model),
      world_(world),
      hooks_(hooks),
      device_(device),
      schedule_(pipeline_schedule(config)),
      boundaries_(pipeline_boundaries(config)),
      stage_(world.pp_rank()),
      stages_(world.pp_size()),
      chunks_(static_cast<int>(config.distributed.pipeline_virtual_stages)),
      precision_(config.trainer.precision) {
  const model::ModelSpec* spec = model.decoder_spec();
  TORCH_CHECK(spec && model.pipeline_stage(), "PipelineRunner: a pipelined decoder");
  d_model_ = spec->d_model;
  tied_ = spec->tie_embeddings;
  if (config.distributed.sequence_parallel && world.tp_size() > 1) sequence_split_ = world.tp_size();
  const auto params = model.parameters_by_name();
  if (!params.empty()) dtype_ = params.front().second.scalar_type();
  for (const auto& [name, p] : params) {  // the first stage's tied embedding (its storage may change, not its handle)
    if (tied_ && stage_ == 0 && name == kEmbedding) embedding_ = p;
  }
}

std::string PipelineRunner::memory_clause() const {
  std::string clause = "; pipeline stage " + std::to_string(stage_) + " of " + std::to_string(stages_) +
                       ": Ψ = its blocks " + stage_blocks(boundaries_, stage_, stages_);
  if (stage_ == 0) clause += " and the embeddings";
  if (stage_ + 1 == stages_) {
    clause += std::string(" and the final norm") +
              (tied_ ? " (the head: a copy of the first stage's embedding)" : " and head");
  }
  return clause;
}

torch::Tensor PipelineRunner::hidden_buffer(const data::Batch& batch) const {
  return torch::empty({batch.input_ids.size(0), batch.input_ids.size(1) / sequence_split_, d_model_},
                      torch::TensorOptions().dtype(dtype_).device(device_));
}

torch::Tensor PipelineRunner::tied_embedding() const {
  TORCH_CHECK(embedding_.defined(), "PipelineRunner: the first stage holds no ", kEmbedding);
  return embedding_;
}

torch::Tensor PipelineRunner::train_step(const std::vector<data::Batch>& micro, double label_smoothing,
                                         const StepHooks& hooks) {
  const int count = static_cast<int>(micro.size());
  const std::vector<parallel::PipelineOp> ops = parallel::stage_schedule(schedule_, stage_, stages_, count, chunks_);
  const auto exchanges = parallel::stage_exchanges(ops, stage_, stages_, chunks_, tied_);
  const model::PipelineStage& at = *model_.pipeline_stage();
  // Per (chunk, micro-batch): the activations received (a leaf whose gradient goes back), the
  // chunk's output (the loss to back-propagate on the last virtual stage), the output's gradient
  // received.
  const auto slot = [count](int chunk, int m) { return static_cast<size_t>(chunk) * static_cast<size_t>(count) + static_cast<size_t>(m); };
  std::vector<torch::Tensor> inputs(static_cast<size_t>(count * chunks_)), outputs(inputs), output_grads(inputs);
  torch::Tensor loss_total = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat32).device(device_));
  const torch::Tensor copy = model_.tied_head_copy();
  torch::Tensor tied_grad;  // first stage: the head's gradient of the tied embedding

  const auto run_exchange = [&](size_t k) {
    std::vector<parallel::PeerTransfer> transfers;
    std::vector<size_t> sent_grads;
    for (const parallel::PipelineTransfer& x : exchanges[k]) {
      const size_t i = slot(x.chunk, x.micro);
      switch (x.payload) {
        case parallel::Payload::kActivation:
          if (x.send) {
            transfers.push_back({outputs[i].detach().contiguous(), x.peer, true});
          } else {
            inputs[i] = hidden_buffer(micro[static_cast<size_t>(x.micro)]);
            transfers.push_back({inputs[i], x.peer, false});
          }
          break;
        case parallel::Payload::kGradient:
          if (x.send) {
            transfers.push_back({inputs[i].grad().contiguous(), x.peer, true});
            sent_grads.push_back(i);
          } else {
            output_grads[i] = hidden_buffer(micro[static_cast<size_t>(x.micro)]);
            transfers.push_back({output_grads[i], x.peer, false});
          }
          break;
        case parallel::Payload::kTiedGradient:
          // From the last stage after its last backward, to the first stage before its own.
          if (x.send) {
            transfers.push_back({copy.grad().defined() ? copy.grad().contiguous() : torch::zeros_like(copy), x.peer, true});
          } else {
            tied_grad = torch::empty_like(tied_embedding());
            transfers.push_back({tied_grad, x.peer, false});
          }
          break;
      }
    }
    if (!transfers.empty()) world_.pipeline_group().exchange(transfers)->wait();
    for (size_t i : sent_grads) inputs[i] = torch::Tensor();
  };

  for (size_t k = 0; k < ops.size(); ++k) {
    run_exchange(k);
    const parallel::PipelineOp& op = ops[k];
    const size_t i = slot(op.chunk, op.micro);
    if (op.forward) {
      if (!at.embeds(op.chunk)) inputs[i].requires_grad_(true);
      torch::Tensor out;
      {
        AutocastScope autocast(precision_, device_);
        out = model_.stage_forward(micro[static_cast<size_t>(op.micro)], inputs[i], label_smoothing, op.chunk);
      }
      if (at.heads(op.chunk)) {
        loss_total += out.detach();
        outputs[i] = hooks.loss(out);
      } else {
        outputs[i] = out;
      }
      continue;
    }
    // Every schedule ends on chunk 0's backward of the last micro-batch.
    const bool last_backward = k + 1 == ops.size();
    if (tied_grad.defined() && last_backward) {
      // Into the embedding's accumulated gradient before the last backward adds its own: the
      // strategy's hooks then reduce the whole gradient.
      torch::Tensor embedding = tied_embedding();
      if (embedding.grad().defined()) {
        embedding.mutable_grad().add_(tied_grad);
      } else {
        embedding.mutable_grad() = tied_grad;
      }
      tied_grad = torch::Tensor();
    }
    hooks.before_backward(last_backward);
    if (at.heads(op.chunk)) {
      outputs[i].backward();
    } else {
      torch::autograd::backward({outputs[i]}, {output_grads[i]});
    }
    outputs[i] = torch::Tensor();
    output_grads[i] = torch::Tensor();
    if (at.embeds(op.chunk)) inputs[i] = torch::Tensor();
  }
  run_exchange(ops.size());
  if (copy.defined()) torch::Tensor(copy).mutable_grad() = torch::Tensor();
  return loss_total;
}

torch::Tensor PipelineRunner::forward_only(const data::Batch& batch) {
  torch::NoGradGuard no_grad;
  auto& group = world_.pipeline_group();
  const model::PipelineStage& at = *model_.pipeline_stage();
  torch::Tensor out;
  for (int c = 0; c < chunks_; ++c) {  // the virtual stages in order, through every stage in turn
    torch::Tensor hidden;
    if (!at.embeds(c)) {
      hidden = hidden_buffer(batch);
      group.exchange({{hidden, (at.virtual_stage(c) + stages_ - 1) % stages_, false}})->wait();
    }
    {
      AutocastScope autocast(precision_, device_);
      out = model_.stage_forward(batch, hidden, 0.0, c);
    }
    if (at.heads(c)) return out;
    group.exchange({{out.contiguous(), (at.virtual_stage(c) + 1) % stages_, true}})->wait();
  }
  return torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat32).device(device_));
}

void PipelineRunner::sync_tied() {
  if (!tied_) return;
  torch::NoGradGuard no_grad;
  auto& group = world_.pipeline_group();
  if (stage_ == 0) {
    // zero3 holds shards of the root between steps: gathered for the send, then freed again.
    if (hooks_) hooks_->gather_unit(0);
    group.exchange({{tied_embedding().detach().to(device_).contiguous(), stages_ - 1, true}})->wait();
    if (hooks_) hooks_->release_unit(0);
  } else if (stage_ + 1 == stages_) {
    torch::Tensor copy = model_.tied_head_copy();
    torch::Tensor buffer = torch::empty(copy.sizes(), copy.options().device(device_));
    group.exchange({{buffer, 0, false}})->wait();
    copy.detach().copy_(buffer);
  }
}

PipelineWhole::PipelineWhole(TaskModel& model, parallel::World& world, const std::vector<int64_t>& boundaries,
                             Access access, const torch::Device& device) {
  if (world.pp_size() <= 1) return;
  if (access == Access::kLoad) {
    model.set_pipeline_whole(true);
    model_ = &model;
    return;
  }
  if (world.dp_rank() != 0 || world.tp_rank() != 0) return;
  torch::NoGradGuard no_grad;
  auto& group = world.pipeline_group();
  const int stage = world.pp_rank();
  if (stage == 0) {
    model.set_pipeline_whole(true);
    model_ = &model;
    for (const auto& [name, p] : model.parameters_by_name()) {
      const int from = model::stage_of_parameter(name, boundaries, world.pp_size());
      if (from == 0) continue;
      torch::Tensor buffer = torch::empty(p.sizes(), p.options().device(device));
      group.exchange({{buffer, from, false}})->wait();
      torch::Tensor(p).detach().copy_(buffer);
    }
    return;
  }
  for (const auto& [name, p] : model.parameters_by_name()) {
    group.exchange({{p.detach().to(device).contiguous(), 0, true}})->wait();
  }
}

PipelineWhole::~PipelineWhole() {
  if (model_) model_->set_pipeline_whole(false);
}

}  // namespace hftrain::train
