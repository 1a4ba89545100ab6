// A task that trains another task's model on its own loss (the preference objectives, a reward
// model): everything but the loss and the window figures is the inner task's, forwarded unchanged,
// so the parameters, weights, saving, parallelism and reports are the inner model's.
#pragma once

#include <memory>

#include "train/task/task_model.h"

namespace hftrain::train {

class TaskDecorator : public TaskModel {
 public:
  explicit TaskDecorator(std::unique_ptr<TaskModel> inner) : inner_(std::move(inner)) {}

  torch::nn::Module& module() override { return inner_->module(); }
  std::vector<std::pair<std::string, torch::Tensor>> parameters_by_name() const override {
    return inner_->parameters_by_name();
  }
  model::ParameterUnits parameter_units() const override { return inner_->parameter_units(); }
  void set_unit_hooks(model::UnitHooks* hooks) override { inner_->set_unit_hooks(hooks); }
  void set_activation_checkpointing(bool on) override { inner_->set_activation_checkpointing(on); }
  void set_neftune_alpha(double alpha) override { inner_->set_neftune_alpha(alpha); }
  torch::Tensor logits(const data::Batch& batch) override { return inner_->logits(batch); }
  torch::Tensor aux_loss() override { return inner_->aux_loss(); }
  void load(const std::filesystem::path& path, const std::string& what,
            const model::WeightHandover& handover = {}) override {
    inner_->load(path, what, handover);
  }
  std::vector<std::pair<std::string, std::string>> text_files(tokenizer::TokenizerKind kind,
                                                              const tokenizer::Tokenizer& tokenizer) const override {
    return inner_->text_files(kind, tokenizer);
  }
  void save_dir(const std::filesystem::path& dir, tokenizer::TokenizerKind kind,
                const tokenizer::Tokenizer& tokenizer) const override {
    inner_->save_dir(dir, kind, tokenizer);
  }
  bool causal_lm() const override { return inner_->causal_lm(); }
  bool per_token() const override { return inner_->per_token(); }
  std::vector<model::HfLinear> hf_linear_modules() const override { return inner_->hf_linear_modules(); }
  std::vector<model::HfParameter> hf_parameters() const override { return inner_->hf_parameters(); }
  config::ModelArch arch() const override { return inner_->arch(); }
  const model::ModelSpec* decoder_spec() const override { return inner_->decoder_spec(); }
  int64_t non_embedding_parameters() const override { return inner_->non_embedding_parameters(); }
  void tensor_parallelize(std::shared_ptr<model::TpGroup> group) override {
    inner_->tensor_parallelize(std::move(group));
  }
  model::TpSplit tp_split(const std::string& name, int rank) const override { return inner_->tp_split(name, rank); }
  void pipeline_split(const std::vector<int64_t>& boundaries, int stage, int stages) override {
    inner_->pipeline_split(boundaries, stage, stages);
  }
  const model::PipelineStage* pipeline_stage() const override { return inner_->pipeline_stage(); }
  torch::Tensor stage_forward(const data::Batch& batch, const torch::Tensor& hidden, double label_smoothing,
                              int chunk) override {
    return inner_->stage_forward(batch, hidden, label_smoothing, chunk);
  }
  void set_pipeline_whole(bool whole) override { inner_->set_pipeline_whole(whole); }
  torch::Tensor tied_head_copy() const override { return inner_->tied_head_copy(); }
  parallel::UnitSizes unit_sizes() const override { return inner_->unit_sizes(); }
  metrics::ModelShape shape(int64_t seq_len) const override { return inner_->shape(seq_len); }

 protected:
  TaskModel& inner() { return *inner_; }

 private:
  std::unique_ptr<TaskModel> inner_;
};

// A decorator's window of figures: one fp64 row of sums per forward, added up until taken
// (TaskModel::take_window_sums), for training's forwards and evaluation's apart.
class WindowSums {
 public:
  void add(const torch::Tensor& sums) {
    torch::Tensor& w = torch::GradMode::is_enabled() ? train_ : eval_;
    w = w.defined() ? w + sums : sums;
  }
  torch::Tensor take(bool evaluation) {
    torch::Tensor& w = evaluation ? eval_ : train_;
    torch::Tensor out = w;
    w = torch::Tensor();
    return out;
  }

 private:
  torch::Tensor train_, eval_;
};

}  // namespace hftrain::train
