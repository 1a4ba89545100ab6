#include "model/hf_weights.h"

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
    m[l + "attn_norm.weight"] = {{h + "input_layernorm.weight"}};
    m[l + "attn.qkv_proj.weight"] = {
        {h + "self_attn.q_proj.weight", h + "self_attn.k_proj.weight", h + "self_attn.v_proj.weight"}, false, {q, kv, kv}};
    m[l + "attn.o_proj.weight"] = {{h + "self_attn.o_proj.weight"}};
    m[l + "mlp_norm.weight"] = {{h + "post_attention_layernorm.weight"}};
    m[l + "mlp.gate_up_proj.weight"] = {{h + "mlp.gate_proj.weight", h + "mlp.up_proj.weight"}, false, {s.d_ff, s.d_ff}};
    m[l + "mlp.down_proj.weight"] = {{h + "mlp.down_proj.weight"}};
  }
  return m;
}

// GPT2LMHeadModel prefixes "transformer.", LlamaForCausalLM "model."; the bare models do not.
std::string strip_prefix(const std::string& name) {
  for (const char* prefix : {"transformer.", "model."}) {
    if (util::starts_with(name, prefix)) return name.substr(std::string(prefix).size());
  }
  return name;
}

}  // namespace

void load_hf_weights(Transformer& model, const TensorList& hf) {
  const ModelSpec& spec = model->spec();
  const auto sources = spec.arch == config::ModelArch::kGpt2 ? gpt2_sources(spec) : llama_sources(spec);
  std::map<std::string, torch::Tensor> by_name;
  for (const auto& [name, t] : hf) by_name[strip_prefix(name)] = t;

  std::vector<std::string> problems;
  std::set<std::string> used;
  torch::NoGradGuard no_grad;
  for (auto& [name, param] : model->parameters_by_name()) {
    auto it = sources.find(name);
    if (it == sources.end()) {
      problems.push_back("no Hugging Face source for " + name);
      continue;
    }
    std::vector<torch::Tensor> parts;
    for (const auto& src : it->second.names) {
      auto found = by_name.find(src);
      if (found == by_name.end()) {
        problems.push_back("missing tensor " + src);
        continue;
      }
      used.insert(src);
      parts.push_back(it->second.transpose ? found->second.t() : found->second);
    }
    if (parts.size() != it->second.names.size()) continue;
    auto value = parts.size() == 1 ? parts[0] : torch::cat(parts, 0);
    if (value.sizes() != param.sizes()) {
      std::ostringstream msg;
      msg << "tensor for " << name << " has shape " << value.sizes() << ", the model needs " << param.sizes();
      problems.push_back(msg.str());
      continue;
    }
    param.copy_(value);
  }
  for (const auto& [name, t] : by_name) {
    // A tied head may still be stored; GPT-2 checkpoints also carry attention-bias buffers.
    const bool harmless = name == "lm_head.weight" || name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias");
    if (!used.count(name) && !harmless) problems.push_back("unexpected tensor " + name);
  }
  if (!problems.empty()) {
    throw util::CheckpointError("the weights do not fit the " + std::string(spec.arch == config::ModelArch::kGpt2 ? "gpt2" : "llama") +
                                    " model: " + util::join(problems, "; "),
                                "check that model.* matches the checkpoint's config.json");
  }
}

TensorList to_hf_weights(const Transformer& model) {
  const ModelSpec& spec = model->spec();
  const bool gpt2 = spec.arch == config::ModelArch::kGpt2;
  const auto sources = gpt2 ? gpt2_sources(spec) : llama_sources(spec);
  const std::string prefix = gpt2 ? "transformer." : "model.";
  TensorList out;
  torch::NoGradGuard no_grad;
  for (const auto& [name, param] : model->parameters_by_name()) {
    const Source& src = sources.at(name);
    auto value = param.detach().to(torch::kCPU, torch::kFloat32);
    std::vector<torch::Tensor> parts =
        src.names.size() == 1 ? std::vector<torch::Tensor>{value} : value.split_with_sizes(src.split, 0);
    for (size_t i = 0; i < parts.size(); ++i) {
      const std::string hf = src.names[i] == "lm_head.weight" ? src.names[i] : prefix + src.names[i];
      out.emplace_back(hf, (src.transpose ? parts[i].t() : parts[i]).contiguous().clone());
    }
  }
  return out;
}

}  // namespace hftrain::model

