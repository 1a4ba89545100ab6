#include "model/hf/hf_weights.h"

#include <algorithm>
#include <map>

#include <torch/torch.h>

#include "model/hf/hf_modules.h"
#include "model/weights/weight_loader.h"
#include "util/strings.h"

namespace hftrain::model {
namespace {

using Source = HfSource;

std::map<std::string, Source> sources_of(const ModelSpec& spec) { return hf_sources(spec); }

// GPT2LMHeadModel prefixes "transformer.", the Llama family "model."; the bare models do not.
std::string strip_prefix(const std::string& name) {
  for (const char* prefix : {"transformer.", "model."}) {
    if (util::starts_with(name, prefix)) return name.substr(std::string(prefix).size());
  }
  return name;
}

// Tensors a checkpoint may carry that are not weights: a tied head stored anyway (or a language
// model's head where a reward model starts), GPT-2's causal mask buffers and older Llama checkpoints'
// rotary frequencies. They are dropped without a word.
bool ignorable(const std::string& name) {
  return name == "lm_head.weight" || name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias") ||
         name.ends_with(".rotary_emb.inv_freq");
}

// Each source tensor as a piece of its parameter: fused sources fill consecutive row ranges.
std::vector<WeightPiece> as_pieces(const Source& src) {
  std::vector<WeightPiece> pieces;
  int64_t offset = 0;
  for (size_t i = 0; i < src.names.size(); ++i) {
    const int64_t rows = src.split.empty() ? -1 : src.split[i];
    pieces.push_back({src.names[i], offset, rows, src.transpose});
    offset += std::max<int64_t>(rows, 0);
  }
  return pieces;
}

}  // namespace

void load_hf_weights(Transformer& model, const TensorSource& hf, const WeightHandover& handover) {
  const ModelSpec& spec = model->spec();
  const auto sources = sources_of(spec);
  WeightRules rules;
  rules.expected = std::string("the ") +
                   (spec.arch == config::ModelArch::kGpt2 ? "gpt2" : "llama") +
                   " model its config describes";
  rules.hint =
      "the weights and config.json come from different models, or the architecture's options "
      "(biases, tied embeddings) differ from what the weights hold; check config.json";
  rules.key_of = strip_prefix;
  // Every parameter has a source (the maps are built from the same spec); an unknown one would be
  // reported missing under its own name.
  rules.pieces_of = [&sources](const std::string& name, const torch::Tensor&) {
    const auto it = sources.find(name);
    return it == sources.end() ? std::vector<WeightPiece>{} : as_pieces(it->second);
  };
  rules.droppable = ignorable;
  // A reward model started from a language model: its score head keeps its initialisation.
  rules.optional_group = [](const std::string& name) { return name == "score.weight" ? name : std::string(); };
  rules.handed_over = handover.handed_over;
  rules.take = handover.take;
  load_weights(model->parameters_by_name(), hf, rules);
}

void load_hf_weights(Transformer& model, const TensorList& hf) {
  load_hf_weights(model, TensorListSource(hf, "the Hugging Face weights"));
}

TensorList to_hf_weights(const Transformer& model) {
  const ModelSpec& spec = model->spec();
  const auto sources = sources_of(spec);
  const std::string prefix = hf_prefix(spec);
  TensorList out;
  torch::NoGradGuard no_grad;
  for (const auto& [name, param] : model->parameters_by_name()) {
    // LoRA adapters are not weights of the Hugging Face model (peft/peft_files.h saves them).
    if (name.find(".lora.") != std::string::npos) continue;
    const Source& src = sources.at(name);
    auto value = param.detach().to(torch::kCPU, torch::kFloat32);  // the parameter itself when CPU fp32
    std::vector<torch::Tensor> parts =
        src.names.size() == 1 ? std::vector<torch::Tensor>{value} : value.split_with_sizes(src.split, 0);
    for (size_t i = 0; i < parts.size(); ++i) {
      const std::string hf = hf_head_tensor(src.names[i]) ? src.names[i] : prefix + src.names[i];
      out.emplace_back(hf, src.transpose ? parts[i].t() : parts[i]);
    }
  }
  return out;
}

}  // namespace hftrain::model
