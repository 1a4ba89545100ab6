#include "model/hf/hf_modules.h"

#include <algorithm>

#include "util/strings.h"

namespace hftrain::model {
namespace {

std::string layer(int64_t i) { return "layers." + std::to_string(i) + "."; }

// The output layer's tensor, named without the body's prefix: lm_head (untied) or a reward model's score.
void head_sources(const ModelSpec& s, std::map<std::string, HfSource>& m) {
  if (s.own_lm_head()) m["lm_head.weight"] = {{"lm_head.weight"}};
  if (s.score_outputs > 0) m["score.weight"] = {{"score.weight"}};
}

std::map<std::string, HfSource> gpt2_sources(const ModelSpec& s) {
  std::map<std::string, HfSource> m{{"embed_tokens.weight", {{"wte.weight"}}},
                                    {"embed_positions.weight", {{"wpe.weight"}}},
                                    {"final_norm.weight", {{"ln_f.weight"}}},
                                    {"final_norm.bias", {{"ln_f.bias"}}}};
  head_sources(s, m);
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

std::map<std::string, HfSource> llama_sources(const ModelSpec& s) {
  const int64_t q = s.n_head * s.head_dim();
  const int64_t kv = s.n_kv_head * s.head_dim();
  std::map<std::string, HfSource> m{{"embed_tokens.weight", {{"embed_tokens.weight"}}},
                                    {"final_norm.weight", {{"norm.weight"}}}};
  head_sources(s, m);
  for (int64_t i = 0; i < s.n_layer; ++i) {
    const std::string h = "layers." + std::to_string(i) + ".";
    const std::string l = layer(i);
    const std::string a = h + "self_attn.";
    // Hugging Face names the norms by position: Llama's post_attention_layernorm is the MLP's
    // pre-norm; with post-norms (OLMo 2) it is the attention's output norm, and with both (Gemma 2)
    // the MLP's pre-norm is pre_feedforward_layernorm.
    switch (s.norm_placement) {
      case config::NormPlacement::kPre:
        m[l + "attn_norm.weight"] = {{h + "input_layernorm.weight"}};
        m[l + "mlp_norm.weight"] = {{h + "post_attention_layernorm.weight"}};
        break;
      case config::NormPlacement::kPost:
        m[l + "attn_post_norm.weight"] = {{h + "post_attention_layernorm.weight"}};
        m[l + "mlp_post_norm.weight"] = {{h + "post_feedforward_layernorm.weight"}};
        break;
      case config::NormPlacement::kSandwich:
        m[l + "attn_norm.weight"] = {{h + "input_layernorm.weight"}};
        m[l + "attn_post_norm.weight"] = {{h + "post_attention_layernorm.weight"}};
        m[l + "mlp_norm.weight"] = {{h + "pre_feedforward_layernorm.weight"}};
        m[l + "mlp_post_norm.weight"] = {{h + "post_feedforward_layernorm.weight"}};
        break;
    }
    for (const std::string kind : {"weight", "bias"}) {
      if (kind == "bias" && !s.qkv_bias()) break;
      m[l + "attn.qkv_proj." + kind] =
          s.fused_projections  // Phi-3's names: hftrain's layout as it is
              ? HfSource{{a + "qkv_proj." + kind}}
              : HfSource{{a + "q_proj." + kind, a + "k_proj." + kind, a + "v_proj." + kind}, false, {q, kv, kv}};
    }
    m[l + "attn.o_proj.weight"] = {{a + "o_proj.weight"}};
    if (s.o_bias()) m[l + "attn.o_proj.bias"] = {{a + "o_proj.bias"}};
    if (s.qk_norm != config::QkNorm::kNone) {
      m[l + "attn.q_norm.weight"] = {{a + "q_norm.weight"}};
      m[l + "attn.k_norm.weight"] = {{a + "k_norm.weight"}};
    }
    if (s.layer_is_moe(i)) {
      // Qwen2-MoE and Qwen3-MoE: mlp.gate, mlp.experts.E.{gate,up,down}_proj (Qwen2-MoE's shared
      // expert: mlp.shared_expert.{gate,up,down}_proj, mlp.shared_expert_gate); Mixtral (Mistral's
      // block, no q/k norms, no shared expert): block_sparse_moe.gate, block_sparse_moe.experts.E.{w1,w3,w2}.
      // Each expert's rows stacked.
      const bool qwen = s.qk_norm == config::QkNorm::kHead || s.shared_expert_d_ff > 0;
      const std::string moe = h + (qwen ? "mlp." : "block_sparse_moe.");
      HfSource gate_up{{}, false, {}}, down{{}, false, {}};
      for (int64_t e = 0; e < s.n_experts; ++e) {
        const std::string x = moe + "experts." + std::to_string(e) + ".";
        gate_up.names.push_back(x + (qwen ? "gate_proj.weight" : "w1.weight"));
        gate_up.names.push_back(x + (qwen ? "up_proj.weight" : "w3.weight"));
        gate_up.split.insert(gate_up.split.end(), {s.expert_d_ff, s.expert_d_ff});
        down.names.push_back(x + (qwen ? "down_proj.weight" : "w2.weight"));
        down.split.push_back(s.d_model);
      }
      m[l + "moe.router"] = {{moe + "gate.weight"}};
      m[l + "moe.experts_gate_up"] = gate_up;
      m[l + "moe.experts_down"] = down;
      if (s.shared_expert_d_ff > 0) {
        const std::string x = moe + "shared_expert.";
        m[l + "moe.shared.gate_up_proj.weight"] = {{x + "gate_proj.weight", x + "up_proj.weight"},
                                                   false,
                                                   {s.shared_expert_d_ff, s.shared_expert_d_ff}};
        m[l + "moe.shared.down_proj.weight"] = {{x + "down_proj.weight"}};
        m[l + "moe.shared_gate.weight"] = {{moe + "shared_expert_gate.weight"}};
      }
      continue;
    }
    for (const std::string kind : {"weight", "bias"}) {
      if (kind == "bias" && !s.mlp_biases()) break;
      m[l + "mlp.gate_up_proj." + kind] =
          s.fused_projections
              ? HfSource{{h + "mlp.gate_up_proj." + kind}}
              : HfSource{{h + "mlp.gate_proj." + kind, h + "mlp.up_proj." + kind}, false, {s.d_ff, s.d_ff}};
      m[l + "mlp.down_proj." + kind] = {{h + "mlp.down_proj." + kind}};
    }
  }
  return m;
}

// "model.layers.0.self_attn.q_proj.weight" -> "model.layers.0.self_attn.q_proj".
std::string module_of(const std::string& tensor) { return tensor.substr(0, tensor.rfind('.')); }

std::string full_name(const ModelSpec& spec, const std::string& name) {
  return hf_head_tensor(name) ? name : hf_prefix(spec) + name;
}

}  // namespace

std::map<std::string, HfSource> hf_sources(const ModelSpec& spec) {
  return spec.arch == config::ModelArch::kGpt2 ? gpt2_sources(spec) : llama_sources(spec);
}

bool hf_head_tensor(const std::string& name) { return name == "lm_head.weight" || name == "score.weight"; }

std::string hf_prefix(const ModelSpec& spec) {
  return spec.arch == config::ModelArch::kGpt2 ? "transformer." : "model.";
}

std::vector<HfParameter> hf_parameters(const ModelSpec& spec) {
  std::vector<HfParameter> out;
  for (const auto& [param, src] : hf_sources(spec)) {
    HfParameter p{.param = param, .modules = {}, .tensors = {}, .transpose = src.transpose, .split = src.split};
    for (const auto& n : src.names) {
      p.tensors.push_back(full_name(spec, n));
      p.modules.push_back(module_of(p.tensors.back()));
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<HfLinear> hf_linear_modules(const ModelSpec& spec) {
  std::vector<HfLinear> out;
  for (const auto& [param, src] : hf_sources(spec)) {
    // Linear weights: two-dimensional, not an embedding table.
    if (!param.ends_with(".weight") || util::starts_with(param, "embed_") || param.find("norm.") != std::string::npos)
      continue;
    const std::string dense = param.substr(0, param.size() - std::string(".weight").size());
    const bool shared =
        param.ends_with("moe.shared.gate_up_proj.weight") || param.ends_with("moe.shared.down_proj.weight");
    const int64_t d_ff = shared ? spec.shared_expert_d_ff : spec.d_ff;  // the shared expert's, or the dense MLP's
    int64_t in = spec.d_model;
    if (param.ends_with(".down_proj.weight")) in = d_ff;
    if (param.ends_with("attn.o_proj.weight")) in = spec.n_head * spec.head_dim();
    int64_t out_rows_total = 0;
    if (param.ends_with("attn.qkv_proj.weight")) out_rows_total = (spec.n_head + 2 * spec.n_kv_head) * spec.head_dim();
    else if (param.ends_with(".gate_up_proj.weight")) out_rows_total = 2 * d_ff;
    else if (param.ends_with("moe.shared_gate.weight")) out_rows_total = 1;
    else if (param.ends_with("mlp.up_proj.weight")) out_rows_total = spec.d_ff;
    else if (param.ends_with("lm_head.weight")) out_rows_total = spec.vocab_size;
    else if (param == "score.weight") out_rows_total = spec.score_outputs;
    else out_rows_total = spec.d_model;  // o_proj, down_proj
    int64_t offset = 0;
    for (size_t i = 0; i < src.names.size(); ++i) {
      const int64_t rows = src.split.empty() ? out_rows_total : src.split[i];
      out.push_back(HfLinear{.name = module_of(full_name(spec, src.names[i])),
                             .dense = dense,
                             .row_offset = offset,
                             .rows = rows,
                             .in_features = in,
                             .conv1d = src.transpose,
                             .output_layer = hf_head_tensor(param)});
      offset += rows;
    }
  }
  // The model's order (layers by number, not as strings sort them).
  std::stable_sort(out.begin(), out.end(), [](const HfLinear& a, const HfLinear& b) {
    const auto layer_of = [](const std::string& dense) -> int64_t {
      return util::starts_with(dense, "layers.") ? std::stoll(dense.substr(7)) : 1 << 30;
    };
    return layer_of(a.dense) < layer_of(b.dense);
  });
  return out;
}

namespace {

// BERT's linear layers in parameter order: name, input and output features.
struct BertLinear {
  std::string name;
  int64_t in = 0, out = 0;
  bool bias = true;
};

// BERT's, RoBERTa's and DeBERTa's parameters in registration order (bert.h): the embedding tables
// (DeBERTa's where its config has them, and its embed_proj), the layers, DeBERTa's relative
// embeddings and their LayerNorm, then the pooler and heads.
std::vector<std::string> bert_parameter_names(const BertSpec& s, const std::vector<BertLinear>& linears) {
  std::vector<std::string> names;
  const auto module = [&](const std::string& m, bool bias) {
    names.push_back(m + ".weight");
    if (bias) names.push_back(m + ".bias");
  };
  const std::string e = s.prefix() + "embeddings.";
  names.push_back(e + "word_embeddings.weight");
  if (!s.deberta() || s.position_biased_input) names.push_back(e + "position_embeddings.weight");
  if (!s.deberta() || s.type_vocab_size > 0) names.push_back(e + "token_type_embeddings.weight");
  size_t i = 0;
  if (i < linears.size() && linears[i].name.ends_with(".embed_proj")) module(linears[i++].name, false);
  module(e + "LayerNorm", true);
  for (; i < linears.size() && linears[i].name.starts_with(s.prefix() + "encoder.layer."); ++i) {
    module(linears[i].name, true);
    // The LayerNorm after each layer's two residual sums.
    if (linears[i].name.ends_with(".output.dense")) {  // attention.output.dense and output.dense
      module(linears[i].name.substr(0, linears[i].name.size() - std::string("dense").size()) + "LayerNorm", true);
    }
  }
  if (s.deberta() && s.relative_attention) names.push_back("deberta.encoder.rel_embeddings.weight");
  if (s.deberta() && s.norm_rel_ebd) module("deberta.encoder.LayerNorm", true);
  for (; i < linears.size(); ++i) module(linears[i].name, true);  // the pooler and heads
  return names;
}

// ModernBERT's parameters in registration order (modernbert.h): its linear layers and norms.
std::vector<std::string> modernbert_parameter_names(const BertSpec& s, const std::vector<BertLinear>& linears) {
  auto norm = [&](std::vector<std::string>& out, const std::string& module) {
    out.push_back(module + ".weight");
    if (s.norm_bias) out.push_back(module + ".bias");
  };
  auto linear = [](std::vector<std::string>& out, const BertLinear& l) {
    out.push_back(l.name + ".weight");
    if (l.bias) out.push_back(l.name + ".bias");
  };
  std::vector<std::string> out{"model.embeddings.tok_embeddings.weight"};
  norm(out, "model.embeddings.norm");
  for (const auto& l : linears) {
    const bool layer = l.name.starts_with("model.layers.");
    const std::string at = layer ? l.name.substr(0, l.name.find('.', std::string("model.layers.").size()) + 1) : "";
    if (l.name.ends_with("attn.Wqkv") && at != "model.layers.0.") norm(out, at + "attn_norm");
    if (l.name.ends_with("mlp.Wi")) norm(out, at + "mlp_norm");
    if (l.name == "head.dense") norm(out, "model.final_norm");
    linear(out, l);
    if (l.name == "head.dense") norm(out, "head.norm");
  }
  if (!s.modernbert_head()) norm(out, "model.final_norm");
  return out;
}
std::vector<BertLinear> bert_linears(const BertSpec& s) {
  std::vector<BertLinear> out;
  const int64_t c = s.hidden_size, f = s.intermediate_size;
  if (s.deberta()) {
    if (s.word_embedding_size() != c)
      out.push_back({"deberta.embeddings.embed_proj", s.word_embedding_size(), c, false});
    for (int64_t i = 0; i < s.num_hidden_layers; ++i) {
      const std::string l = "deberta.encoder.layer." + std::to_string(i) + ".";
      for (const char* qkv : {"query_proj", "key_proj", "value_proj"})
        out.push_back({l + "attention.self." + qkv, c, c});
      if (s.relative_attention && !s.share_att_key && s.c2p) out.push_back({l + "attention.self.pos_key_proj", c, c});
      if (s.relative_attention && !s.share_att_key && s.p2c) out.push_back({l + "attention.self.pos_query_proj", c, c});
      out.push_back({l + "attention.output.dense", c, c});
      out.push_back({l + "intermediate.dense", c, f});
      out.push_back({l + "output.dense", f, c});
    }
    if (s.deberta_pooler()) out.push_back({"pooler.dense", c, c});
    if (s.with_classifier) out.push_back({"classifier", c, s.num_labels});
    return out;
  }
  if (s.modernbert()) {
    for (int64_t i = 0; i < s.num_hidden_layers; ++i) {
      const std::string l = "model.layers." + std::to_string(i) + ".";
      out.push_back({l + "attn.Wqkv", c, 3 * c, s.attention_bias});
      out.push_back({l + "attn.Wo", c, c, s.attention_bias});
      out.push_back({l + "mlp.Wi", c, 2 * f, s.mlp_bias});
      out.push_back({l + "mlp.Wo", f, c, s.mlp_bias});
    }
    if (s.modernbert_head()) {
      out.push_back({"head.dense", c, c, s.classifier_bias});
      out.push_back({"classifier", c, s.num_labels});
    }
    return out;
  }
  for (int64_t i = 0; i < s.num_hidden_layers; ++i) {
    const std::string l = s.prefix() + "encoder.layer." + std::to_string(i) + ".";
    for (const char* qkv : {"query", "key", "value"}) out.push_back({l + "attention.self." + qkv, c, c});
    out.push_back({l + "attention.output.dense", c, c});
    out.push_back({l + "intermediate.dense", c, f});
    out.push_back({l + "output.dense", f, c});
  }
  if (s.has_pooler()) out.push_back({s.prefix() + "pooler.dense", c, c});
  if (s.roberta_head()) {  // RobertaClassificationHead
    out.push_back({"classifier.dense", c, c});
    out.push_back({"classifier.out_proj", c, s.num_labels});
  } else if (s.with_classifier) {
    out.push_back({"classifier", c, s.num_labels});
  }
  return out;
}

}  // namespace

std::vector<HfLinear> hf_linear_modules(const BertSpec& spec) {
  std::vector<HfLinear> out;
  for (const auto& l : bert_linears(spec)) {
    out.push_back(HfLinear{.name = l.name,
                           .dense = l.name,
                           .row_offset = 0,
                           .rows = l.out,
                           .in_features = l.in,
                           .conv1d = false,
                           .output_layer = l.name.starts_with("classifier") || l.name == "head.dense" ||
                                           l.name == "pooler.dense"});
  }
  return out;
}

std::vector<HfParameter> hf_parameters(const BertSpec& spec) {
  const std::vector<std::string> names = spec.modernbert() ? modernbert_parameter_names(spec, bert_linears(spec))
                                                           : bert_parameter_names(spec, bert_linears(spec));
  std::vector<HfParameter> out;
  for (const auto& n : names) out.push_back(HfParameter{.param = n, .modules = {module_of(n)}, .tensors = {n}});
  return out;
}

}  // namespace hftrain::model
