// The model the training loop trains, whatever its task: a causal language model (the decoder
// transformer: loss per next token) or a sequence classifier (a BERT encoder: loss per sequence).
// The loop, the strategies and checkpoints see only this: parameters, the forward to a summed
// loss, weights in and out, and the shape figures for memory and MFU reports.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>

#include "data/loader.h"
#include "model/weights/weight_loader.h"
#include "tokenizer/tokenizer.h"
#include "parallel/plan/memory_plan.h"
#include "metrics/mfu.h"
#include "model/encoder/bert_spec.h"
#include "model/hf/hf_modules.h"
#include "model/parameter_units.h"
#include "model/decoder/pipeline_stage.h"
#include "model/spec.h"
#include "model/decoder/tensor_parallel.h"
#include "model/decoder/tp_plan.h"

namespace hftrain::train {

class TaskModel {
 public:
  virtual ~TaskModel() = default;

  virtual torch::nn::Module& module() = 0;
  // Parameters by name, each once, in registration order (what optimizers and checkpoints use).
  virtual std::vector<std::pair<std::string, torch::Tensor>> parameters_by_name() const = 0;
  virtual model::ParameterUnits parameter_units() const = 0;
  virtual void set_unit_hooks(model::UnitHooks* hooks) = 0;
  virtual void set_activation_checkpointing(bool on) = 0;
  // NEFTune's noise on the input embeddings while training (model/neftune.h); 0: none.
  virtual void set_neftune_alpha(double alpha) = 0;

  // The batch's loss summed over its targets (tokens, or sequences), in fp32; `logits`, when
  // given, receives the outputs (for metrics).
  virtual torch::Tensor loss_sum(const data::Batch& batch, double label_smoothing, torch::Tensor* logits) = 0;
  // The outputs for the batch's rows, (B, T, V) for a decoder (preference objectives score them);
  // the default refuses.
  virtual torch::Tensor logits(const data::Batch& batch);
  // Figures the task adds to a logging window (a preference objective's rewards and log-probs): their
  // names, and one fp64 tensor on the model's device of their sums over the window's samples followed
  // by the samples counted, which the trainer sums over the data-parallel ranks before dividing;
  // undefined when there are none. Training's forwards (grad mode on) and evaluation's (off) fill two
  // windows; take_window_sums starts the next one.
  virtual std::vector<std::string> window_metric_names() const { return {}; }
  virtual torch::Tensor take_window_sums(bool /*evaluation*/) { return {}; }
  // The figures of summed window sums, each named `prefix` + its name: by default each name's sum over
  // the last entry (the samples counted); a task whose figures have other counts says so here.
  virtual std::vector<std::pair<std::string, double>> window_figures(const torch::Tensor& sums,
                                                                     const std::string& prefix) const;
  // An auxiliary loss of the last loss_sum, already weighted, that training adds per micro-batch
  // (a mixture of experts' load-balancing loss); undefined when the model has none.
  virtual torch::Tensor aux_loss() { return {}; }

  // Copies the weights of the model directory or checkpoint at `path`; `what` names it in
  // messages. ConfigError for another shape, CheckpointError for missing or extra tensors.
  // `handover`: parameters handed over as they are read instead of copied in (weight_loader.h);
  // the encoder ignores it.
  virtual void load(const std::filesystem::path& path, const std::string& what,
                    const model::WeightHandover& handover = {}) = 0;
  // The files of a model directory besides the weights (model.json or config.json, tokenizer).
  virtual std::vector<std::pair<std::string, std::string>> text_files(tokenizer::TokenizerKind kind,
                                                                      const tokenizer::Tokenizer& tokenizer) const = 0;
  // Writes a model directory (weights and text files), crash-safely.
  virtual void save_dir(const std::filesystem::path& dir, tokenizer::TokenizerKind kind,
                        const tokenizer::Tokenizer& tokenizer) const = 0;

  virtual bool causal_lm() const = 0;
  // A token classifier: one label per token (peft's TOKEN_CLS).
  virtual bool per_token() const { return false; }
  // The Hugging Face linear layers and parameters (model/hf/hf_modules.h): LoRA's targets and peft's
  // tensor names.
  virtual std::vector<model::HfLinear> hf_linear_modules() const = 0;
  virtual std::vector<model::HfParameter> hf_parameters() const = 0;
  virtual config::ModelArch arch() const = 0;
  // The decoder's spec (QLoRA's quantization while loading); null for other tasks.
  virtual const model::ModelSpec* decoder_spec() const { return nullptr; }
  virtual int64_t non_embedding_parameters() const = 0;

  // Tensor parallelism (model/decoder/tensor_parallel.h): keep this rank's pieces of the weights and split
  // the computation over `group`; once, after the weights are in place, before the move to the
  // device. Decoders and BERT-style encoders split (the default refuses).
  virtual void tensor_parallelize(std::shared_ptr<model::TpGroup> group);
  // Where rank `rank`'s piece of parameter `name` lies in the whole parameter.
  virtual model::TpSplit tp_split(const std::string& /*name*/, int /*rank*/) const { return {}; }

  // Pipeline parallelism (model/decoder/pipeline_stage.h): keep stage `stage` of `stages` of the split at
  // `boundaries` (stages * chunks + 1 block indices); once, after the weights are in place and
  // before tensor_parallelize. Decoders split (the default refuses).
  virtual void pipeline_split(const std::vector<int64_t>& boundaries, int stage, int stages);
  // This model's stage; null when it is whole.
  virtual const model::PipelineStage* pipeline_stage() const { return nullptr; }
  // Chunk `chunk`'s part of loss_sum: from the batch's ids (the first virtual stage) or the
  // previous virtual stage's output `hidden`, to this chunk's output, or on the last virtual stage
  // the loss summed over the targets.
  virtual torch::Tensor stage_forward(const data::Batch& batch, const torch::Tensor& hidden, double label_smoothing,
                                      int chunk);
  // Every parameter present for a scope that saves or loads the whole model (see
  // TransformerImpl::set_pipeline_whole), or back to this stage's.
  virtual void set_pipeline_whole(bool /*whole*/) {}
  // The last stage's copy of a tied embedding, which the first stage owns; undefined elsewhere.
  virtual torch::Tensor tied_head_copy() const { return {}; }
  virtual parallel::UnitSizes unit_sizes() const = 0;
  virtual metrics::ModelShape shape(int64_t seq_len) const = 0;
};

// The task's window figures as means (take_window_sums, already summed over the ranks), each named
// `prefix` + its name ("eval_rewards/margins"); empty when `sums` is undefined or counts nothing.
std::vector<std::pair<std::string, double>> window_means(const TaskModel& model, const torch::Tensor& sums,
                                                         const std::string& prefix = "");

// What every task forwards unchanged to its module M (a torch::nn::ModuleHolder of a module with
// parameters_by_name, parameter_units, set_unit_hooks, set_activation_checkpointing,
// tensor_parallelize, tp_split, and a spec()
// with root_parameter_count and block_parameter_count).
template <typename M>
class ModuleTask : public TaskModel {
 public:
  explicit ModuleTask(M model) : model_(std::move(model)) {}
  torch::nn::Module& module() override { return *model_; }
  std::vector<std::pair<std::string, torch::Tensor>> parameters_by_name() const override {
    return model_->parameters_by_name();
  }
  model::ParameterUnits parameter_units() const override { return model_->parameter_units(); }
  void set_unit_hooks(model::UnitHooks* hooks) override { model_->set_unit_hooks(hooks); }
  void set_activation_checkpointing(bool on) override { model_->set_activation_checkpointing(on); }
  void set_neftune_alpha(double alpha) override { model_->set_neftune_alpha(alpha); }
  int64_t non_embedding_parameters() const override { return model_->non_embedding_parameters(); }
  parallel::UnitSizes unit_sizes() const override {
    return {model_->spec().root_parameter_count(), model_->spec().block_parameter_count()};
  }
  void tensor_parallelize(std::shared_ptr<model::TpGroup> group) override {
    model_->tensor_parallelize(std::move(group));
  }
  model::TpSplit tp_split(const std::string& name, int rank) const override { return model_->tp_split(name, rank); }

 protected:
  M model_;
};

// The decoder transformer (GPT-2, Llama families). With init kSkip the weights are left as LibTorch's
// modules make them: only for a model whose every weight is loaded next (load() is strict).
std::unique_ptr<TaskModel> make_causal_lm(const model::ModelSpec& spec,
                                          model::WeightInit init = model::WeightInit::kRandom);
// A BERT or RoBERTa encoder with a classifier over `labels` (config.json's id2label): of sequences,
// or of tokens with spec.per_token.
std::unique_ptr<TaskModel> make_sequence_classifier(const model::BertSpec& spec, std::vector<std::string> labels);

}  // namespace hftrain::train
