#include "train/step/pipeline_runner.h"

#include <torch/torch.h>

#include "model/decoder/pipeline_stage.h"
#include "train/build/pipeline_setup.h"
#include "train/step/precision.h"

namespace hftrain::train {
namespace {

constexpr const char* kEmbedding = "embed_tokens.weight";

}  // namespace

PipelineRunner::PipelineRunner(TaskModel& model, parallel::World& world, const config::Config& config,
                               const torch::Device& device, model::UnitHooks* hooks)
    : model_(model),
      world_(world),
      hooks_(hooks),
      device_(device),
      schedule_(pipeline_schedule(config)),
      boundaries_(pipeline_boundaries(config.distributed, *model.decoder_spec())),
      stage_(world.pp_rank()),
      stages_(world.pp_size()),
      chunks_(static_cast<int>(config.distributed.pipeline_virtual_stages)),
      precision_(config.trainer.precision),
      label_smoothing_(config.trainer.label_smoothing) {
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

StepRunner::Losses PipelineRunner::forward_backward(const std::vector<data::Batch>& micro, const Hooks& hooks) {
  const int count = static_cast<int>(micro.size());
  const std::vector<parallel::PipelineOp> ops = parallel::stage_schedule(schedule_, stage_, stages_, count, chunks_);
  const auto exchanges = parallel::stage_exchanges(ops, stage_, stages_, chunks_, tied_);
  const model::PipelineStage& at = *model_.pipeline_stage();
  // Per (chunk, micro-batch): the activations received (a leaf whose gradient goes back), the
  // chunk's output (the loss to back-propagate on the last virtual stage), the output's gradient
  // received.
  const auto slot = [count](int chunk, int m) {
    return static_cast<size_t>(chunk) * static_cast<size_t>(count) + static_cast<size_t>(m);
  };
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
            transfers.push_back(
                {copy.grad().defined() ? copy.grad().contiguous() : torch::zeros_like(copy), x.peer, true});
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
        out = model_.stage_forward(micro[static_cast<size_t>(op.micro)], inputs[i], label_smoothing_, op.chunk);
      }
      if (at.heads(op.chunk)) {
        if (hooks.loss_factor != 1.0) out = out * hooks.loss_factor;
        loss_total += out.detach();
        outputs[i] = hooks.scale(hooks.normalise(out));
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
    hooks.after_backward(last_backward);
    outputs[i] = torch::Tensor();
    output_grads[i] = torch::Tensor();
    if (at.embeds(op.chunk)) inputs[i] = torch::Tensor();
  }
  run_exchange(ops.size());
  if (copy.defined()) torch::Tensor(copy).mutable_grad() = torch::Tensor();
  Losses out;
  out.sum = loss_total;
  return out;
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
