// make_sequence_classifier (task_model.h): a BERT or RoBERTa encoder with a classifier, one loss
// per sequence, or per labelled token for a token classifier (BertSpec::per_token).
// Its model directory is a Hugging Face one (config.json with id2label, safetensors under
// transformers' names, tokenizer.json), which from_pretrained loads as it is.
#include <unistd.h>

#include <torch/torch.h>

#include "tokenizer/tokenizer_json.h"
#include "model/weights/model_files.h"
#include "model/encoder/bert.h"
#include "model/encoder/bert_weights.h"
#include "model/hf/hf_config.h"
#include "model/hf/hf_export.h"
#include "model/hf/hf_modules.h"
#include "model/weights/stored_weights.h"
#include "train/build/model_from.h"
#include "train/task/task_model.h"
#include "util/error.h"
#include "util/file_writer.h"
#include "util/fs.h"
#include "util/log.h"

namespace hftrain::train {
namespace fs = std::filesystem;
namespace {

class SequenceClassifier final : public ModuleTask<model::BertEncoder> {
 public:
  SequenceClassifier(const model::BertSpec& spec, std::vector<std::string> labels)
      : ModuleTask(model::BertEncoder(spec)), labels_(std::move(labels)) {}

  torch::Tensor loss_sum(const data::Batch& batch, double label_smoothing, torch::Tensor* logits) override {
    torch::Tensor out = model_->forward(batch.input_ids, batch.attention_mask, batch.token_type_ids);
    if (logits) *logits = out;
    // Summed over the batch's labelled sequences (tokens): the loop divides by their count over
    // all micro-batches and ranks, as it does with a language model's tokens.
    return model::classification_loss(out.reshape({-1, out.size(-1)}), batch.labels.reshape({-1}), label_smoothing,
                                      /*summed=*/true);
  }


  void load(const fs::path& path, const std::string& what, const model::WeightHandover& = {}) override {
    const ModelSource source = read_model_source(path);
    if (!source.bert) {
      throw util::ConfigError(what + ": " + source.dir.string() + " holds a decoder (" +
                                  model::shape_overrides(source.spec) + "), not a BERT encoder",
                              "name a BERT directory (BertModel, BertForSequenceClassification) in model.from");
    }
    const model::BertLoadReport report = model::load_bert_weights(model_, model::StoredWeights(source.dir));
    util::log::info(what + ": starting from the weights in " + source.dir.string() + " (Hugging Face layout)");
    if (const std::string note = report.describe(); !note.empty()) util::log::info(what + ": " + note);
  }
  std::vector<std::pair<std::string, std::string>> text_files(tokenizer::TokenizerKind,
                                                              const tokenizer::Tokenizer& tokenizer) const override {
    return {{model::kHfConfigFile, model::bert_config_json(model_->spec(), labels_)},
            {model::kTokenizerFile, tokenizer::tokenizer_json_text(tokenizer)}};
  }
  void save_dir(const fs::path& dir, tokenizer::TokenizerKind kind,
                const tokenizer::Tokenizer& tokenizer) const override {
    const auto files = text_files(kind, tokenizer);  // refuses a tokenizer it cannot write, before any I/O
    fs::path tmp = dir;
    tmp += ".tmp-" + std::to_string(::getpid());
    std::error_code ec;
    fs::remove_all(tmp, ec);
    fs::create_directories(tmp, ec);
    if (ec) throw util::io_error("create", tmp, ec.value());
    try {
      model::write_hf_bert(model_, tmp, labels_, model::kDefaultHfShardBytes);  // weights and config.json
      for (const auto& [name, text] : files) {
        if (name != model::kHfConfigFile) util::atomic_write_file(tmp / name, text);
      }
      util::publish_dir(tmp, dir);
      util::fsync_dir(dir.parent_path());
    } catch (...) {
      fs::remove_all(tmp, ec);
      throw;
    }
  }

  bool causal_lm() const override { return false; }
  bool per_token() const override { return model_->spec().per_token; }
  std::vector<model::HfLinear> hf_linear_modules() const override { return model::hf_linear_modules(model_->spec()); }
  std::vector<model::HfParameter> hf_parameters() const override { return model::hf_parameters(model_->spec()); }
  config::ModelArch arch() const override { return config::ModelArch::kBert; }
  metrics::ModelShape shape(int64_t seq_len) const override {
    const auto& s = model_->spec();
    return {model_->non_embedding_parameters(), s.num_hidden_layers, s.num_attention_heads, s.head_dim(), seq_len};
  }

 private:
  std::vector<std::string> labels_;
};

}  // namespace

std::unique_ptr<TaskModel> make_sequence_classifier(const model::BertSpec& spec, std::vector<std::string> labels) {
  return std::make_unique<SequenceClassifier>(spec, std::move(labels));
}

}  // namespace hftrain::train
