#include "model/weights/saved_model.h"

#include <unistd.h>

#include <cerrno>
#include <optional>
#include <string>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "tokenizer/byte_tokenizer.h"
#include "tokenizer/tokenizer_json.h"
#include "model/weights/safetensors.h"
#include "model/weights/stored_weights.h"
#include "model/weights/weight_loader.h"
#include "util/error.h"
#include "util/file_writer.h"
#include "util/fs.h"
#include "util/strings.h"
#include "util/json_depth.h"

namespace hftrain::model {
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

constexpr const char* kByteMarkerKey = "hftrain_tokenizer";
constexpr const char* kDirHint =
    "give a model directory (with model.json, model.safetensors, tokenizer.json) or a run "
    "directory "
    "(with final/ or checkpoint-N/)";

std::string byte_tokenizer_text(const std::vector<std::string>& specials) {
  nlohmann::ordered_json j{{kByteMarkerKey, "byte"}, {"special_tokens", specials}};
  return j.dump(2) + "\n";
}

std::string tokenizer_text(const Transformer& model, tokenizer::TokenizerKind kind,
                           const tokenizer::Tokenizer* tokenizer) {
  if (tokenizer && tokenizer->vocab_size() > model->spec().vocab_size) {
    throw util::ConfigError("the tokenizer has " + std::to_string(tokenizer->vocab_size()) +
                                " tokens, more than model.vocab_size " +
                                std::to_string(model->spec().vocab_size),
                            "set model.vocab_size to at least the tokenizer's vocabulary size");
  }
  if (kind == tokenizer::TokenizerKind::kByte) {
    const auto* byte = dynamic_cast<const tokenizer::ByteTokenizer*>(tokenizer);
    if (tokenizer && !byte)
      throw util::UsageError("save_model_dir: tokenizer kind is byte but the tokenizer is not");
    return byte_tokenizer_text(byte ? byte->specials() : tokenizer::ByteTokenizer().specials());
  }
  if (!tokenizer || dynamic_cast<const tokenizer::ByteTokenizer*>(tokenizer))
    throw util::UsageError("save_model_dir: tokenizer kind is bpe but no tokenizer.json tokenizer was given");
  return tokenizer::tokenizer_json_text(*tokenizer);  // BpeTokenizer as hftrain writes it, HfTokenizer as loaded
}

fs::path required_file(const fs::path& dir, const char* name) {
  fs::path p = dir / name;
  std::error_code ec;
  if (!fs::exists(p, ec)) {
    if (name == std::string(kModelSpecFile) && fs::exists(dir / kHfConfigFile, ec)) {
      // A BERT classifier's run writes its final/ and checkpoints in the Hugging Face layout.
      throw util::CheckpointError(dir.string() + " is a Hugging Face model directory (config.json), not one of "
                                      "hftrain's causal language models (model.json)",
                                  "load it with transformers' from_pretrained; generate and export take hftrain's "
                                  "GPT-2 and Llama models, and model.from takes this directory as it is");
    }
    throw util::CheckpointError(
        p.string() + " is missing",
        "the model directory " + dir.string() +
            " is incomplete (an interrupted save?); use another checkpoint");
  }
  return p;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> model_text_files(
    const Transformer& model, tokenizer::TokenizerKind kind, const tokenizer::Tokenizer* tokenizer) {
  return {{kModelSpecFile, model->spec().to_json()},
          {kTokenizerFile, tokenizer_text(model, kind, tokenizer)}};
}

void write_model_files(const fs::path& dir, const Transformer& model, tokenizer::TokenizerKind kind,
                       const tokenizer::Tokenizer* tokenizer) {
  const auto text_files = model_text_files(model, kind, tokenizer);
  TensorList tensors;
  for (const auto& [name, p] : model->parameters_by_name()) {
    tensors.emplace_back(name, p.detach().to(torch::kCPU, torch::kFloat32));
  }
  write_safetensors(dir / kModelWeightsFile, tensors, {{"format", "pt"}});
  for (const auto& [name, text] : text_files) util::atomic_write_file(dir / name, text);
}

void save_model_dir(const fs::path& dir, const Transformer& model, tokenizer::TokenizerKind kind,
                    const tokenizer::Tokenizer* tokenizer) {
  // Refuse a mismatched tokenizer before touching the filesystem.
  tokenizer_text(model, kind, tokenizer);
  fs::path tmp = dir;
  tmp += ".tmp-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);  // left by a crashed save of an earlier process with our pid
  if (!fs::create_directories(tmp, ec) || ec)
    throw util::io_error("create", tmp, ec ? ec.value() : EEXIST);
  try {
    write_model_files(tmp, model, kind, tokenizer);
    util::publish_dir(tmp, dir);
    util::fsync_dir(dir.parent_path());
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
}

std::unique_ptr<tokenizer::Tokenizer> load_tokenizer_file(const fs::path& path,
                                                     tokenizer::TokenizerKind* kind) {
  const std::string text = util::read_file<util::DataError>(path, "tokenizer file");
  const Json j = util::parse_json<util::DataError>(text, path.string());
  if (!j.is_object() || !j.contains(kByteMarkerKey)) {
    if (kind) *kind = tokenizer::TokenizerKind::kBpe;
    return tokenizer::parse_tokenizer_json(text, path.string());
  }
  const Json& marker = j[kByteMarkerKey];
  if (!marker.is_string() || marker.get<std::string>() != "byte") {
    throw util::DataError(path.string() + ": unknown " + kByteMarkerKey + " " + marker.dump() +
                              " (expected \"byte\")",
                          "the file is damaged or from a newer hftrain");
  }
  std::vector<std::string> specials = tokenizer::ByteTokenizer().specials();
  if (j.contains("special_tokens")) {
    const Json& list = j["special_tokens"];
    bool ok = list.is_array();
    specials.clear();
    for (const auto& item : ok ? list : Json::array()) {
      if (!item.is_string()) ok = false;
      if (ok) specials.push_back(item.get<std::string>());
    }
    if (!ok) throw util::DataError(path.string() + ": special_tokens must be a list of strings");
  }
  if (kind) *kind = tokenizer::TokenizerKind::kByte;
  try {
    return std::make_unique<tokenizer::ByteTokenizer>(std::move(specials));
  } catch (const util::Error& e) {
    throw util::DataError(path.string() + ": " + e.what(), "the file is damaged");
  }
}

fs::path resolve_model_dir(const fs::path& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status))
    throw util::CheckpointError("checkpoint " + path.string() + " does not exist", kDirHint);
  if (!fs::is_directory(status)) {
    throw util::CheckpointError("checkpoint " + path.string() + " is not a directory", kDirHint);
  }
  if (fs::exists(path / kModelSpecFile, ec)) return path;
  if (fs::is_directory(path / "final", ec)) return path / "final";
  std::optional<uint64_t> best;
  fs::path best_dir;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    const std::string name = entry.path().filename().string();
    constexpr std::string_view kPrefix = "checkpoint-";
    if (name.size() <= kPrefix.size() || name.size() > kPrefix.size() + 18 ||
        name.rfind(kPrefix, 0) != 0)
      continue;
    const std::string digits = name.substr(kPrefix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos || !entry.is_directory(ec))
      continue;
    const uint64_t step = std::stoull(digits);
    if (!best || step > *best) best = step, best_dir = entry.path();
  }
  if (ec)
    throw util::CheckpointError("cannot list " + path.string() + ": " + ec.message(),
                                "check its permissions");
  if (!best) {
    throw util::CheckpointError(path.string() + " holds no model.json, final/ or checkpoint-N/",
                                kDirHint);
  }
  return best_dir;
}

ModelSpec read_model_spec(const fs::path& dir) {
  const fs::path spec_path = required_file(dir, kModelSpecFile);
  return ModelSpec::from_json(util::read_file<util::CheckpointError>(spec_path, "model description"),
                              spec_path.string());
}

void load_model_weights(Transformer& model, const fs::path& dir, const WeightHandover& handover) {
  // hftrain wrote these names itself: each parameter under its own name, nothing to tolerate but a
  // language model's head where a reward model starts.
  WeightRules rules;
  rules.expected = "model.json";
  rules.hint =
      "the weights and model.json come from different models, or the directory is damaged; use "
      "another checkpoint";
  rules.handed_over = handover.handed_over;
  rules.take = handover.take;
  if (model->spec().score_outputs > 0) {  // a reward model started from a language model's directory
    rules.droppable = [](const std::string& key) { return key == "lm_head.weight"; };
    rules.optional_group = [](const std::string& name) { return name == "score.weight" ? name : std::string(); };
  }
  load_weights(model->parameters_by_name(), StoredWeights(dir), rules);
}

LoadedModel load_model_dir(const fs::path& path) {
  LoadedModel out;
  out.dir = resolve_model_dir(path);
  const fs::path spec_path = out.dir / kModelSpecFile;
  const ModelSpec spec = read_model_spec(out.dir);
  if (!has_model_weights(out.dir)) required_file(out.dir, kModelWeightsFile);
  const fs::path tokenizer_path = required_file(out.dir, kTokenizerFile);
  out.tokenizer = load_tokenizer_file(tokenizer_path, &out.tokenizer_kind);
  if (out.tokenizer->vocab_size() > spec.vocab_size) {
    throw util::CheckpointError(
        tokenizer_path.string() + " has " + std::to_string(out.tokenizer->vocab_size()) +
            " tokens, more than the vocab_size " + std::to_string(spec.vocab_size) + " of " +
            spec_path.string(),
        "the tokenizer does not belong to this model; copy the tokenizer.json it was trained with");
  }
  {
    // Building the model draws its random initialisation from torch's global generator; keep the
    // caller's random stream as it was (a resumed run must not see it move).
    auto global = at::detail::getDefaultCPUGenerator();
    const auto state = global.get_state();
    out.model = Transformer(spec);
    global.set_state(state);
  }
  load_model_weights(out.model, out.dir);
  out.model->eval();
  return out;
}

}  // namespace hftrain::model
