// make_causal_lm (task_model.h): the decoder transformer, trained on next-token targets.
#include <torch/torch.h>

#include "metrics/format.h"
#include "model/hf/hf_config.h"
#include "model/hf/hf_weights.h"
#include "model/weights/saved_model.h"
#include "model/weights/stored_weights.h"
#include "model/decoder/transformer.h"
#include "train/build/model_from.h"
#include "train/step/step_math.h"
#include "train/task/task_model.h"
#include "util/error.h"
#include "util/log.h"

namespace hftrain::train {
namespace {

// A RoPE model's context (model.max_seq_len, rope_theta, rope_scaling) decides no weight: a fine-tune
// may extend it. `source` with `target`'s context, where positions are rotated rather than learned.
model::ModelSpec with_context_of(model::ModelSpec source, const model::ModelSpec& target) {
  if (source.learned_positions() || target.learned_positions()) return source;
  source.max_seq_len = target.max_seq_len;
  source.rope_theta = target.rope_theta;
  source.rope_scaling = target.rope_scaling;
  return source;
}

std::string rope_context(const model::ModelSpec& s) {
  std::string out = std::to_string(s.max_seq_len) + " positions, rope_theta " +
                    metrics::format_number(s.rope_theta, 6) + ", rope_scaling " +
                    model::rope_type_name(s.rope_scaling.type);
  if (s.rope_scaling.type != config::RopeType::kDefault) {
    out += " factor " + metrics::format_number(s.rope_scaling.factor, 6);
  }
  return out;
}

class CausalLm final : public ModuleTask<model::Transformer> {
 public:
  CausalLm(const model::ModelSpec& spec, model::WeightInit init)
      : ModuleTask(model::Transformer(spec, init)) {}

  torch::Tensor loss_sum(const data::Batch& batch, double label_smoothing, torch::Tensor* logits) override {
    // A padded batch's padding is no token of the load-balancing loss, as in transformers.
    model_->set_router_token_mask(batch.attention_mask);
    if (!logits) {
      return model_->loss_sum(batch.input_ids, batch.labels, label_smoothing, batch.position_ids,
                              batch.document_offsets);
    }
    *logits = model_->forward(batch.input_ids, nullptr, batch.position_ids);
    return token_loss_sum(*logits, batch.labels, label_smoothing);
  }
  torch::Tensor logits(const data::Batch& batch) override {
    model_->set_router_token_mask(batch.attention_mask);
    return model_->forward(batch.input_ids, nullptr, batch.position_ids);
  }
  void pipeline_split(const std::vector<int64_t>& boundaries, int stage, int stages) override {
    model_->pipeline_split(boundaries, stage, stages);
  }
  const model::PipelineStage* pipeline_stage() const override { return model_->pipeline_stage(); }
  torch::Tensor stage_forward(const data::Batch& batch, const torch::Tensor& hidden, double label_smoothing,
                              int chunk) override {
    return model_->stage_forward(batch.input_ids, hidden, batch.labels, label_smoothing, batch.position_ids, chunk);
  }
  void set_pipeline_whole(bool whole) override { model_->set_pipeline_whole(whole); }
  torch::Tensor tied_head_copy() const override { return model_->tied_head_copy(); }
  torch::Tensor aux_loss() override {
    const torch::Tensor aux = model_->take_router_aux_loss();
    return aux.defined() ? aux * model_->spec().router_aux_loss_coef : aux;
  }

  void load(const std::filesystem::path& path, const std::string& what,
            const model::WeightHandover& handover = {}) override {
    // Only the spec is read first; the weights are memory-mapped and copied straight in.
    const ModelSource source = read_model_source(path);
    const model::ModelSpec& spec = model_->spec();
    if (source.bert || !with_context_of(source.spec, spec).same_shape(spec)) {
      const std::string have = source.bert ? "a BERT encoder" : model::shape_overrides(source.spec);
      throw util::ConfigError(what + ": the model in " + source.dir.string() +
                                  " has a different shape than model.*: it is " + have + "; model.* says " +
                                  model::shape_overrides(spec),
                              "set these model.* values (as overrides, or in the recipe): " + have);
    }
    if (source.spec.score_outputs > 0 && source.spec.score_outputs != spec.score_outputs) {
      throw util::ConfigError(
          what + ": " + source.dir.string() + " is a reward model (a score head of " +
              std::to_string(source.spec.score_outputs) + " output" + (source.spec.score_outputs > 1 ? "s" : "") +
              "), not " + (spec.score_outputs > 0 ? "a one-output reward model" : "a language model"),
          spec.score_outputs > 0 ? "start from a language model or a reward model with num_labels=1"
                                 : "set preference.objective=reward to train it on, or start from a language model");
    }
    if (source.hugging_face) {
      model::load_hf_weights(model_, model::StoredWeights(source.dir), handover);
    } else {
      model::load_model_weights(model_, source.dir, handover);
    }
    util::log::info(what + ": starting from the weights in " + source.dir.string() +
                    (source.hugging_face ? " (Hugging Face layout)" : ""));
    if (!source.spec.same_shape(spec)) {
      util::log::info(what + ": the RoPE context changes from " + rope_context(source.spec) + " to " +
                      rope_context(spec) + "; the weights are the same (positions past " +
                      std::to_string(source.spec.max_seq_len) + " are new to them)");
    }
    if (spec.score_outputs > 0 && source.spec.score_outputs == 0) {
      util::log::info(what + ": a language model's body; the reward model's score head starts from N(0, " +
                      std::to_string(spec.init_std) + ") and its output layer is left out");
    }
  }
  std::vector<std::pair<std::string, std::string>> text_files(tokenizer::TokenizerKind kind,
                                                              const tokenizer::Tokenizer& tokenizer) const override {
    return model::model_text_files(model_, kind, &tokenizer);
  }
  void save_dir(const std::filesystem::path& dir, tokenizer::TokenizerKind kind,
                const tokenizer::Tokenizer& tokenizer) const override {
    model::save_model_dir(dir, model_, kind, &tokenizer);
  }


  bool causal_lm() const override { return true; }
  std::vector<model::HfLinear> hf_linear_modules() const override { return model::hf_linear_modules(model_->spec()); }
  std::vector<model::HfParameter> hf_parameters() const override { return model::hf_parameters(model_->spec()); }
  config::ModelArch arch() const override { return model_->spec().arch; }
  const model::ModelSpec* decoder_spec() const override { return &model_->spec(); }
  metrics::ModelShape shape(int64_t seq_len) const override {
    const auto& s = model_->spec();
    // N counts what every token is multiplied through: a tied output layer shares the embedding's
    // weight, but its (V x C) product is computed all the same (nanoGPT's MFU counts it too).
    int64_t n = model_->non_embedding_parameters();
    if (s.tie_embeddings && s.score_outputs == 0) n += s.vocab_size * s.d_model;
    // A mixture of experts multiplies each token through experts_per_token of its experts only.
    n -= s.parameter_count() - s.active_parameter_count();
    return {n, s.n_layer, s.n_head, s.head_dim(), seq_len};
  }
};

}  // namespace

std::unique_ptr<TaskModel> make_causal_lm(const model::ModelSpec& spec, model::WeightInit init) {
  return std::make_unique<CausalLm>(spec, init);
}

}  // namespace hftrain::train
