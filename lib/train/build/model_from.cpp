#include "train/build/model_from.h"

#include <filesystem>
#include <sstream>

#include "model/hf/hf_config.h"
#include "model/weights/saved_model.h"
#include "util/error.h"
#include "util/fs.h"

namespace hftrain::train {
namespace fs = std::filesystem;

ModelSource read_model_source(const fs::path& path) {
  std::error_code ec;
  ModelSource out;
  // A run directory stands for its final/ (else its newest checkpoint-N/), in either layout: a
  // classifier's run writes Hugging Face directories there.
  const bool model_dir = fs::exists(path / model::kModelSpecFile, ec) || fs::exists(path / model::kHfConfigFile, ec);
  const fs::path dir = model_dir ? path : model::resolve_model_dir(path);
  out.hugging_face = fs::exists(dir / model::kHfConfigFile, ec) && !fs::exists(dir / model::kModelSpecFile, ec);
  if (out.hugging_face) {  // config.json + safetensors, e.g. from save_pretrained
    out.dir = dir;
    out.spec_file = dir / model::kHfConfigFile;
    const std::string text = util::read_file<util::CheckpointError>(out.spec_file, "model config");
    if (model::is_bert_config(text)) {
      out.bert = model::bert_spec_from_hf_config(text, out.spec_file.string(), &out.id2label);
    } else {
      out.spec = model::spec_from_hf_config(text, out.spec_file.string());
    }
  } else {
    out.dir = dir;
    out.spec_file = out.dir / model::kModelSpecFile;
    out.spec = model::read_model_spec(out.dir);
  }
  return out;
}

namespace {

// The model.* values a BERT encoder has (the rest of its config.json stays with the directory).
std::string bert_shape_values(const model::BertSpec& b) {
  std::ostringstream out;
  out << "model.arch=bert model.encoder="
      << (b.roberta() ? "roberta" : b.modernbert() ? "modernbert" : b.deberta() ? "deberta-v2" : "bert")
      << " model.n_layer="
      << b.num_hidden_layers << " model.n_head=" << b.num_attention_heads << " model.d_model=" << b.hidden_size
      << " model.d_ff=" << b.intermediate_size << " model.max_seq_len=" << b.max_tokens()
      << " model.vocab_size=" << b.vocab_size;
  if (b.per_token) out << " model.task=token_classification";  // a token classifier's directory
  return out.str();
}

}  // namespace

config::ResolvedConfig resolve_with_model_from(config::ResolveOptions options, const config::Schema& schema) {
  config::ResolveOptions read_from = options;
  read_from.skip_cross_field_rules = true;  // model.* and tokenizer.* are not final yet
  config::ResolvedConfig first = config::resolve_config(read_from, schema);
  if (!first.values.model.from) return config::resolve_config(options, schema);
  const ModelSource source = read_model_source(*first.values.model.from);
  options.model_source = source.spec_file.string();
  std::error_code ec;
  if (source.hugging_face && fs::exists(source.dir / model::kTokenizerFile, ec)) {
    options.model_values.emplace_back("tokenizer.type", "hf");
    options.model_values.emplace_back("tokenizer.path", (source.dir / model::kTokenizerFile).string());
  }
  // "model.arch=llama model.n_layer=2 ...": the overrides that give the spec's shape.
  std::istringstream words(source.bert ? bert_shape_values(*source.bert) : model::shape_overrides(source.spec));
  for (std::string word; words >> word;) {
    const size_t eq = word.find('=');
    options.model_values.emplace_back(word.substr(0, eq), word.substr(eq + 1));
  }
  // A context extended by fine-tuning (model.max_seq_len and model.rope_scaling above the
  // directory's) scales from the context the weights were trained at, unless the recipe says another.
  if (!source.bert && !source.spec.learned_positions() && source.spec.rope_scaling.type == config::RopeType::kDefault) {
    options.model_values.emplace_back("model.rope_scaling.original_max_seq_len",
                                      std::to_string(source.spec.max_seq_len));
  }
  return config::resolve_config(options, schema);
}

}  // namespace hftrain::train
