#include "train/task/adapter_model.h"

#include <unistd.h>

#include <torch/torch.h>

#include "model/encoder/bert.h"
#include "model/encoder/bert_weights.h"
#include "model/weights/model_files.h"
#include "model/weights/safetensors_header.h"

#include "model/hf/hf_modules.h"
#include "model/hf/hf_weights.h"
#include "model/weights/stored_weights.h"
#include "peft/lora.h"
#include "peft/peft_files.h"
#include "train/build/model_from.h"
#include "util/error.h"
#include "util/file_writer.h"
#include "util/fs.h"

namespace hftrain::train {
namespace fs = std::filesystem;

bool is_adapter_dir(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / peft::kAdapterConfigFile, ec);
}

namespace {

// The adapter directory's settings and the base model they name, checked to exist.
struct AdapterAndBase {
  peft::AdapterFile file;
  ModelSource base;
};
AdapterAndBase adapter_and_base(const fs::path& dir) {
  peft::AdapterFile file = peft::read_adapter_config(dir);
  if (file.base_model.empty()) {
    throw util::CheckpointError(
        (dir / peft::kAdapterConfigFile).string() + " names no base model (base_model_name_or_path)",
        "set it to the base model's directory");
  }
  if (!fs::exists(file.base_model)) {
    throw util::CheckpointError("the adapter in " + dir.string() + " was trained on " + file.base_model +
                                    ", which does not exist here",
                                "put the base model there, or edit base_model_name_or_path in " +
                                    (dir / peft::kAdapterConfigFile).string());
  }
  ModelSource base = read_model_source(file.base_model);
  return {std::move(file), std::move(base)};
}

// Attaches the adapters of `file` to `root` (a loaded base) and loads their weights.
void attach_adapters(torch::nn::Module& root, const peft::AdapterFile& file,
                     const std::vector<model::HfLinear>& linears, const std::vector<model::HfParameter>& hf_params,
                     config::ModelArch arch) {
  const auto targets = peft::select_lora_targets(linears, file.target_modules, arch);
  const peft::LoraModel lora = peft::attach_lora(root, targets, hf_params, file.modules_to_save, file.lora);
  peft::load_adapter_weights(root, lora, hf_params, file);
}

// Every adapted layer of `root` gets its merged weight (W + scale B A; DoRA's rescaled); the
// adapters are removed.
void merge_adapters(torch::nn::Module& root) {
  torch::NoGradGuard no_grad;
  auto params = root.named_parameters();
  for (const auto& [dense, adapter] : peft::lora_adapters(root)) {
    auto w = params[dense + ".weight"];
    w.copy_(adapter->merged_weight(w));
  }
  for (auto& item : root.named_modules()) {
    if (auto* d = item.value()->as<model::DenseImpl>()) d->remove_adapter();
  }
}

// The classifier's labels: the adapter directory's config.json (a LoRA classifier run writes it),
// else the base's own classifier's, else LABEL_i for the rows of the adapter's classifier.
std::vector<std::string> classifier_labels(const fs::path& dir, const ModelSource& base) {
  std::error_code ec;
  if (fs::exists(dir / model::kHfConfigFile, ec)) {
    const ModelSource own = read_model_source(dir);
    if (!own.id2label.empty()) return own.id2label;
  }
  if (!base.id2label.empty()) return base.id2label;
  const fs::path weights = dir / peft::kAdapterWeightsFile;
  for (const auto& t : model::read_safetensors_header(weights).tensors) {
    // BERT's classifier, or RoBERTa's head's output projection.
    const bool head =
        t.name == "base_model.model.classifier.weight" || t.name == "base_model.model.classifier.out_proj.weight";
    if (head && t.shape.size() == 2) {
      std::vector<std::string> labels;
      for (int64_t i = 0; i < t.shape[0]; ++i) labels.push_back("LABEL_" + std::to_string(i));
      return labels;
    }
  }
  throw util::CheckpointError(weights.string() + " holds no classifier (base_model.model.classifier.weight) and " +
                                  dir.string() + " names no labels",
                              "merge an adapter saved with its classifier (peft.modules_to_save), or add the "
                              "classifier's config.json (id2label) to " + dir.string());
}

}  // namespace

bool is_classifier_adapter(const fs::path& dir) { return adapter_and_base(dir).base.bert.has_value(); }

model::LoadedModel load_adapter_model(const fs::path& dir, bool merge) {
  const auto [file, source] = adapter_and_base(dir);
  if (source.bert) {
    throw util::CheckpointError("the adapter in " + dir.string() + " adapts a BERT classifier, which `generate` and "
                                "the decoders' tools do not load",
                                "hftrain export " + dir.string() + " --hf DIR --merge writes it as a classifier");
  }
  model::LoadedModel out;
  out.dir = dir;
  model::ModelSpec spec = source.spec;
  // A reward model's adapter (peft's SEQ_CLS on a decoder): the base's body with the score head it trained.
  if (file.task_type == "SEQ_CLS" && spec.score_outputs == 0) spec.score_outputs = 1;
  out.model = model::Transformer(spec, model::WeightInit::kSkip);
  if (source.hugging_face) {
    model::load_hf_weights(out.model, model::StoredWeights(source.dir));
  } else {
    model::load_model_weights(out.model, source.dir);
  }
  attach_adapters(*out.model, file, model::hf_linear_modules(spec), model::hf_parameters(spec), spec.arch);
  if (merge) merge_adapters(*out.model);
  for (auto& p : out.model->parameters()) p.requires_grad_(false);
  out.model->eval();
  fs::path tokenizer = dir / "tokenizer.json";
  if (!fs::exists(tokenizer)) tokenizer = source.dir / "tokenizer.json";
  out.tokenizer = model::load_tokenizer_file(tokenizer, &out.tokenizer_kind);
  return out;
}

void write_merged_classifier(const fs::path& dir, const fs::path& out, uint64_t max_shard_bytes) {
  const auto [file, base] = adapter_and_base(dir);
  if (!base.bert) {
    throw util::CheckpointError("the adapter in " + dir.string() + " adapts a decoder, not a BERT classifier");
  }
  const std::vector<std::string> labels = classifier_labels(dir, base);
  model::BertSpec spec = *base.bert;
  spec.with_classifier = true;
  spec.per_token = file.task_type == "TOKEN_CLS";
  spec.num_labels = static_cast<int64_t>(labels.size());
  model::BertEncoder encoder(spec);
  model::load_bert_weights(encoder, model::StoredWeights(base.dir));
  attach_adapters(*encoder, file, model::hf_linear_modules(spec), model::hf_parameters(spec), config::ModelArch::kBert);
  merge_adapters(*encoder);
  encoder->eval();

  fs::path tokenizer = dir / model::kTokenizerFile;
  std::error_code ec;
  if (!fs::exists(tokenizer, ec)) tokenizer = base.dir / model::kTokenizerFile;
  fs::path staged = out;
  staged += ".tmp-" + std::to_string(::getpid());
  fs::remove_all(staged, ec);
  fs::create_directories(staged, ec);
  if (ec) throw util::io_error("create", staged, ec.value());
  try {
    model::write_hf_bert(encoder, staged, labels, max_shard_bytes);
    if (fs::exists(tokenizer, ec)) {
      util::atomic_write_file(staged / model::kTokenizerFile,
                              util::read_file<util::CheckpointError>(tokenizer, "tokenizer"));
    }
    util::publish_dir(staged, out);
    util::fsync_dir(out.parent_path());
  } catch (...) {
    fs::remove_all(staged, ec);
    throw;
  }
}

}  // namespace hftrain::train
