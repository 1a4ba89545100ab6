#include "model/encoder/bert_weights.h"

#include <torch/torch.h>

#include "model/weights/model_files.h"
#include "model/weights/weight_loader.h"
#include "util/fs.h"

namespace hftrain::model {
namespace {

// A stored name as our parameter names spell it, but without the prefix ("bert.", "roberta."):
// the prefix stripped (either layout loads) and TensorFlow's LayerNorm.gamma / beta renamed as
// transformers does.
std::string normalised(std::string name, const std::string& prefix) {
  if (name.starts_with(prefix)) name.erase(0, prefix.size());
  for (const auto& [from, to] : {std::pair{".LayerNorm.gamma", ".LayerNorm.weight"},
                                 std::pair{".LayerNorm.beta", ".LayerNorm.bias"}}) {
    if (name.ends_with(from))
      name = name.substr(0, name.size() - std::string_view(from).size()) + to;
  }
  return name;
}

std::string unprefixed(const std::string& param, const std::string& prefix) {
  return param.starts_with(prefix) ? param.substr(prefix.size()) : param;
}

// Stored tensors transformers itself drops when it loads a BERT or RoBERTa encoder or classifier:
// buffers and pretraining heads (BERT's cls.*, RoBERTa's lm_head.*), and a classifier or pooler
// the model has no place for (RobertaForSequenceClassification has no pooler).
// ModernBertForMaskedLM's decoder.* goes too, and its head.* where the model has no head.
bool droppable(const std::string& name, const BertSpec& spec) {
  if (spec.modernbert()) {
    return name.starts_with("decoder.") || (!spec.with_classifier && name.starts_with("classifier.")) ||
           (!spec.modernbert_head() && name.starts_with("head."));
  }
  // DeBERTa-v2: DebertaV2ForMaskedLM's heads (cls.*, lm_predictions.*), the replaced-token detection
  // head of the v3 checkpoints (mask_predictions.*), absolute positions a model
  // without them ignores (transformers' _keys_to_ignore_on_load_unexpected), a pooler or classifier
  // it has no place for.
  if (spec.deberta()) {
    return name.starts_with("cls.") || name.starts_with("lm_predictions.") || name.starts_with("mask_predictions.") ||
           name == "embeddings.position_ids" ||
           (!spec.position_biased_input && name == "embeddings.position_embeddings.weight") ||
           (!spec.with_classifier && name.starts_with("classifier.")) ||
           (!spec.deberta_pooler() && name.starts_with("pooler."));
  }
  return name == "embeddings.position_ids" || name == "embeddings.token_type_ids" || name.starts_with("cls.") ||
         name.starts_with("lm_head.") || (!spec.with_classifier && name.starts_with("classifier.")) ||
         (!spec.has_pooler() && name.starts_with("pooler."));
}

const char* family_name(const BertSpec& spec) {
  return spec.roberta() ? "RoBERTa" : spec.modernbert() ? "ModernBERT" : spec.deberta() ? "DeBERTa-v2" : "BERT";
}

}  // namespace

BertLoadReport load_bert_weights(BertEncoder& model, const TensorSource& hf) {
  const BertSpec& spec = model->spec();
  const std::string prefix = spec.prefix();
  WeightRules rules;
  rules.expected = std::string("the ") + family_name(spec) + " model its config describes";
  rules.hint =
      "the weights and config.json come from different models, or the number of labels differs "
      "from the classifier's (check config.json and the data's labels)";
  rules.key_of = [prefix](const std::string& name) { return normalised(name, prefix); };
  rules.pieces_of = [prefix](const std::string& name, const torch::Tensor&) {
    return std::vector<WeightPiece>{{unprefixed(name, prefix)}};
  };
  rules.droppable = [spec](const std::string& key) { return droppable(key, spec); };
  // Parameter groups a checkpoint may lack as a whole: they then keep their initialisation.
  rules.optional_group = [prefix](const std::string& param) -> std::string {
    // ModernBERT's head.* too: a ModernBertModel directory has none, a ModernBertForMaskedLM one does.
    // DeBERTa's pooler.* too (DebertaV2ForSequenceClassification's ContextPooler, outside "deberta.").
    for (const std::string& group :
         {std::string("classifier."), prefix + "pooler.", std::string("head."), std::string("pooler.")}) {
      if (param.starts_with(group)) return group;
    }
    return "";
  };
  return load_weights(model->parameters_by_name(), hf, rules);
}

BertLoadReport load_bert_weights(BertEncoder& model, const TensorList& hf) {
  return load_bert_weights(model, TensorListSource(hf, "the Hugging Face weights"));
}

TensorList to_hf_bert_weights(const BertEncoder& model) {
  const bool keep_prefix = model->spec().with_classifier;  // BertModel files have no "bert."
  const std::string prefix = model->spec().prefix();
  TensorList out;
  torch::NoGradGuard no_grad;
  for (const auto& [name, param] : model->parameters_by_name()) {
    out.emplace_back(keep_prefix ? name : unprefixed(name, prefix),
                     param.detach().to(torch::kCPU, torch::kFloat32));
  }
  return out;
}

void write_hf_bert(const BertEncoder& model, const std::filesystem::path& dir,
                   const std::vector<std::string>& id2label, uint64_t max_shard_bytes) {
  const std::string config =
      bert_config_json(model->spec(), id2label);  // refuses bad labels before writing
  write_sharded_weights(dir, to_hf_bert_weights(model), max_shard_bytes);
  util::atomic_write_file(dir / kHfConfigFile, config);
}

}  // namespace hftrain::model
