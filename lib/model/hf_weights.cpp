#include "model/hf_weights.h"

#include <algorithm>
#include <map>
#include <set>

#include <torch/torch.h>

#include "util/error.h"
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
// mask buffers and older Llama checkpoints' rotary frequencies.
bool ignorable(const std::string& name) {
  return name == "lm_head.weight" || name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias") ||
         name.ends_with(".rotary_emb.inv_freq");
}

std::string shape_string(c10::IntArrayRef sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(sizes[i]);
  }
  s += "]";
  return s;
}

// One HF tensor and where it goes: rows [offset, offset + rows) of the parameter, transposed or not.
struct Part {
  std::string hf_name;  // as stored (with its prefix)
  torch::Tensor param;
  int64_t offset = 0;
  int64_t rows = 0;
  bool transpose = false;

  torch::Tensor target() const { return param.narrow(0, offset, rows); }
  std::vector<int64_t> expected_shape() const {
    auto shape = target().sizes().vec();
    if (transpose) std::reverse(shape.begin(), shape.end());
    return shape;
  }
};

}  // namespace

void load_hf_weights(Transformer& model, const TensorSource& hf) {
  const ModelSpec& spec = model->spec();
  const auto sources = sources_of(spec);
  std::map<std::string, std::string> stored;  // name without prefix -> name as stored
  for (const auto& name : hf.names()) stored[strip_prefix(name)] = name;

  // Plan every copy and check names and shapes before changing anything.
  std::vector<std::string> missing, misshaped, no_source;
  std::set<std::string> used;
  std::vector<Part> parts;
  for (auto& [name, param] : model->parameters_by_name()) {
    auto it = sources.find(name);
    if (it == sources.end()) {
      no_source.push_back(name);
      continue;
    }
    const Source& src = it->second;
    int64_t offset = 0;
    for (size_t i = 0; i < src.names.size(); ++i) {
      const int64_t rows = src.split.empty() ? param.size(0) : src.split[i];
      Part part{"", param, offset, rows, src.transpose};
      offset += rows;
      auto found = stored.find(src.names[i]);
      if (found == stored.end()) {
        missing.push_back(src.names[i]);
        continue;
      }
      used.insert(found->first);
      part.hf_name = found->second;
      const torch::Tensor t = hf.get(part.hf_name);
      const auto want = part.expected_shape();
      if (t.sizes() != c10::IntArrayRef(want) || !t.is_floating_point()) {
        misshaped.push_back(part.hf_name + " (" + std::string(c10::toString(t.scalar_type())) + " " +
                            shape_string(t.sizes()) + ", expected " + shape_string(want) + ")");
        continue;
      }
      parts.push_back(std::move(part));
    }
  }
  std::vector<std::string> unexpected;
  for (const auto& [name, as_stored] : stored) {
    if (!used.count(name) && !ignorable(name)) unexpected.push_back(as_stored);
  }
  if (!missing.empty() || !misshaped.empty() || !unexpected.empty() || !no_source.empty()) {
    const std::string family = spec.arch == config::ModelArch::kGpt2 ? "gpt2" : "llama";
    std::string message = hf.where() + " does not hold the weights of the " + family + " model its config describes:";
    if (!missing.empty()) message += " missing " + describe_names(missing) + ";";
    if (!unexpected.empty()) message += " unexpected " + describe_names(unexpected) + ";";
    if (!misshaped.empty()) message += " wrong shape or type " + describe_names(misshaped, 8, false) + ";";
    if (!no_source.empty()) message += " no Hugging Face tensor for " + describe_names(no_source) + ";";
    message.pop_back();
    throw util::CheckpointError(message, "the weights and config.json come from different models, or the "
                                         "architecture's options (biases, tied embeddings) differ from what the "
                                         "weights hold; check config.json");
  }
  torch::NoGradGuard no_grad;
  for (const Part& p : parts) {
    const torch::Tensor t = hf.get(p.hf_name);
    p.target().copy_(p.transpose ? t.t() : t);
  }
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
