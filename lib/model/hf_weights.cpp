#include "model/hf_weights.h"

#include <algorithm>
#include <map>

#include <torch/torch.h>

#include "model/weight_loader.h"
#include "util/strings.h"

namespace hftrain::model {
namespace {

std::string layer(int64_t i) { return "layers." + std::to_string(i) + "."; }

// Where each of our parameters comes from: one or more HF tensors, concatenated along dim 0 after
// an optional transpose.
struct Source {
  std::vector<std::string> names;
  bool transpose = false;
  std::vector<int64_t> split{};  // dim-0 sizes of the parts, for fused sources
};

std::map<std::string, Source> gpt2_sources(const ModelSpec& s) {
  std::map<std::string, Source> m{{"embed_tokens.weight", {{"wte.weight"}}},
                                  {"embed_positions.weight", {{"wpe.weight"}}},
                                  {"final_norm.weight", {{"ln_f.weight"}}},
                                  {"final_norm.bias", {{"ln_f.bias"}}}};
  if (!s.tie_embeddings) m["lm_head.weight"] = {{"lm_head.weight"}};
  for (int64_t i = 0; i < s.n_layer; ++i) {
    const std::string h = "h." + std::to_string(i) + ".";
    const std::string l = layer(i);
    m[l + "attn_norm.weight"] = {{h + "ln_1.weight"}};
    m[l + "attn_norm.bias"] = {{h + "ln_1.bias"}};
    m[l + "attn.qkv_proj.weight"] = {{h + "attn.c_attn.weight"}, true};
    m[l + "attn.qkv_proj.bias"] = {{h + "attn.c_attn.bias"}};
    m[l + "attn.o_proj.weight"] = {{h + "attn.c_proj.weight"}, true};
    m[l + "attn.o_proj.bias"] = {{h + "attn.c_proj.bias"}};
    m[l + "mlp_norm.weight"] = {{h + "ln_2.weight"}};
    m[l + "mlp_norm.bias"] = {{h + "ln_2.bias"}};
    m[l + "mlp.up_proj.weight"] = {{h + "mlp.c_fc.weight"}, true};
    m[l + "mlp.up_proj.bias"] = {{h + "mlp.c_fc.bias"}};
    m[l + "mlp.down_proj.weight"] = {{h + "mlp.c_proj.weight"}, true};
    m[l + "mlp.down_proj.bias"] = {{h + "mlp.c_proj.bias"}};
  }
  return m;
}

std::map<std::string, Source> llama_sources(const ModelSpec& s) {
  const int64_t q = s.n_head * s.head_dim();
  const int64_t kv = s.n_kv_head * s.head_dim();
  std::map<std::string, Source> m{{"embed_tokens.weight", {{"embed_tokens.weight"}}},
                                  {"final_norm.weight", {{"norm.weight"}}}};
  if (!s.tie_embeddings) m["lm_head.weight"] = {{"lm_head.weight"}};
  for (int64_t i = 0; i < s.n_layer; ++i) {
    const std::string h = "layers." + std::to_string(i) + ".";
    const std::string l = layer(i);
    const std::string a = h + "self_attn.";
    m[l + "attn_norm.weight"] = {{h + "input_layernorm.weight"}};
    m[l + "mlp_norm.weight"] = {{h + "post_attention_layernorm.weight"}};
    for (const std::string kind : {"weight", "bias"}) {
      if (kind == "bias" && !s.qkv_bias()) break;
      m[l + "attn.qkv_proj." + kind] = {{a + "q_proj." + kind, a + "k_proj." + kind, a + "v_proj." + kind}, false, {q, kv, kv}};
    }
    m[l + "attn.o_proj.weight"] = {{a + "o_proj.weight"}};
    if (s.o_bias()) m[l + "attn.o_proj.bias"] = {{a + "o_proj.bias"}};
    for (const std::string kind : {"weight", "bias"}) {
      if (kind == "bias" && !s.mlp_biases()) break;
      m[l + "mlp.gate_up_proj." + kind] = {{h + "mlp.gate_proj." + kind, h + "mlp.up_proj." + kind}, false, {s.d_ff, s.d_ff}};
      m[l + "mlp.down_proj." + kind] = {{h + "mlp.down_proj." + kind}};
    }
  }
  return m;
}

std::map<std::string, Source> sources_of(const ModelSpec& spec) {
  return spec.arch == config::ModelArch::kGpt2 ? gpt2_sources(spec) : llama_sources(spec);
}

// GPT2LMHeadModel prefixes "transformer.", the Llama family "model."; the bare models do not.
std::string strip_prefix(const std::string& name) {
  for (const char* prefix : {"transformer.", "model."}) {
    if (util::starts_with(name, prefix)) return name.substr(std::string(prefix).size());
  }
  return name;
}

// Tensors a checkpoint may carry that are not weights: a tied head stored anyway, GPT-2's causal
// mask buffers and older Llama checkpoints' rotary frequencies. They are dropped without a word.
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

void load_hf_weights(Transformer& model, const TensorSource& hf) {
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
  load_weights(model->parameters_by_name(), hf, rules);
}

void load_hf_weights(Transformer& model, const TensorList& hf) {
  load_hf_weights(model, TensorListSource(hf, "the Hugging Face weights"));
}

TensorList to_hf_weights(const Transformer& model) {
  const ModelSpec& spec = model->spec();
  const bool gpt2 = spec.arch == config::ModelArch::kGpt2;
  const auto sources = sources_of(spec);
  const std::string prefix = gpt2 ? "transformer." : "model.";
  TensorList out;
  torch::NoGradGuard no_grad;
  for (const auto& [name, param] : model->parameters_by_name()) {
    const Source& src = sources.at(name);
    auto value = param.detach().to(torch::kCPU, torch::kFloat32);  // the parameter itself when CPU fp32
    std::vector<torch::Tensor> parts =
        src.names.size() == 1 ? std::vector<torch::Tensor>{value} : value.split_with_sizes(src.split, 0);
    for (size_t i = 0; i < parts.size(); ++i) {
      const std::string hf = src.names[i] == "lm_head.weight" ? src.names[i] : prefix + src.names[i];
      out.emplace_back(hf, src.transpose ? parts[i].t() : parts[i]);
    }
  }
  return out;
}

}  // namespace hftrain::model
