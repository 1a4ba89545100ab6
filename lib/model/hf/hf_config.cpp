#include "model/hf/hf_config.h"

#include <algorithm>
#include <cmath>

#include "model/hf/hf_config_common.h"
#include "util/json_depth.h"

namespace hftrain::model {
namespace {

using namespace hf;  // the reader, the family table and RoPE (hf_config_common.h)
using config::AttentionBias;
using config::ModelArch;
using config::RopeType;

constexpr const char* kSequenceClassification = "ForSequenceClassification";

// Mixtral's, Qwen2-MoE's and Qwen3-MoE's experts: how many, top-k, their size, renormalisation,
// which layers, Qwen2-MoE's shared expert.
void read_experts(const Reader& r, ModelSpec& s, LlamaFamily family) {
  const bool mixtral = family == LlamaFamily::kMixtral;
  const bool qwen2 = family == LlamaFamily::kQwen2Moe;
  // transformers 5 writes num_local_experts for both; Qwen3-MoE's 4.x configs say num_experts.
  s.n_experts = r.positive("num_local_experts", r.positive("num_experts", mixtral ? 8 : qwen2 ? 60 : 128));
  s.experts_per_token = r.positive("num_experts_per_tok", mixtral ? 2 : qwen2 ? 4 : 8);
  s.expert_d_ff = mixtral ? s.d_ff : r.positive("moe_intermediate_size", qwen2 ? 1408 : 768);
  s.moe_renormalize = mixtral || r.boolean("norm_topk_prob", false);
  s.moe_every = mixtral ? 1 : r.positive("decoder_sparse_step", 1);
  if (s.experts_per_token > s.n_experts) r.fail("`num_experts_per_tok` exceeds the number of experts");
  unsupported_if(r,
                 r.has("mlp_only_layers") &&
                     !(r.json().at("mlp_only_layers").is_array() && r.json().at("mlp_only_layers").empty()),
                 "`mlp_only_layers` (dense layers named one by one)");
  unsupported_if(r, r.number("router_jitter_noise", 0) != 0, "router_jitter_noise");
  // transformers adds router_aux_loss_coef x the load-balancing loss to the training loss only when
  // output_router_logits is on.
  s.router_aux_loss_coef = r.boolean("output_router_logits", false) ? r.number("router_aux_loss_coef", 0.001) : 0.0;
  if (qwen2) {
    s.shared_expert_d_ff = r.positive("shared_expert_intermediate_size", 5632);
  } else {
    unsupported_if(r, r.has("shared_expert_intermediate_size"), "shared experts outside Qwen2-MoE");
  }
}

// Which layers attend to a sliding window, as hftrain's pattern (ModelSpec::layer_slides): every
// layer (Mistral, Phi-3), those layer_types names (transformers 5), Qwen2's layers from
// max_window_layers on, or Gemma's alternation (every 2nd, every sliding_window_pattern-th layer
// global). A list no pattern describes is refused.
void read_sliding_window(const Reader& r, ModelSpec& s, LlamaFamily moe_family) {
  const LlamaFamily family = dense_block(moe_family);
  const bool qwen = family == LlamaFamily::kQwen2 || family == LlamaFamily::kQwen3;
  const bool gemma = family == LlamaFamily::kGemma2 || family == LlamaFamily::kGemma3;
  if (family == LlamaFamily::kLlama || family == LlamaFamily::kOlmo2) return;  // no sliding layers
  if (qwen && !r.boolean("use_sliding_window", false)) return;                 // Qwen ignores the window then
  if (!gemma && !r.has("sliding_window")) return;
  const int64_t window = gemma ? r.positive("sliding_window", 4096) : r.positive("sliding_window");
  std::vector<bool> slides(static_cast<size_t>(s.n_layer), true);
  if (r.has("layer_types")) {
    const Json& types = r.json().at("layer_types");
    if (!types.is_array() || static_cast<int64_t>(types.size()) != s.n_layer) {
      r.fail("`layer_types` is not a list of num_hidden_layers entries");
    }
    for (size_t i = 0; i < types.size(); ++i) {
      const bool sliding = types[i] == "sliding_attention";
      unsupported_if(r, !sliding && types[i] != "full_attention", "`layer_types` has " + types[i].dump());
      slides[i] = sliding;
    }
  } else if (qwen) {
    const Json& m = r.has("max_window_layers") ? r.json().at("max_window_layers") : Json(28);
    if (!m.is_number_integer() || m.get<int64_t>() < 0) r.fail("`max_window_layers` is not a whole number of layers");
    const int64_t first = m.get<int64_t>();
    // Qwen2: the layers from max_window_layers on; Qwen2-MoE: the odd ones (from 1) below it.
    const bool moe = moe_family == LlamaFamily::kQwen2Moe;
    for (int64_t i = 0; i < s.n_layer; ++i)
      slides[static_cast<size_t>(i)] = moe ? (i + 1) % 2 != 0 && i < first : i >= first;
  } else if (gemma) {
    const int64_t every = family == LlamaFamily::kGemma2 ? 2 : r.positive("sliding_window_pattern", 6);
    for (int64_t i = 0; i < s.n_layer; ++i) slides[static_cast<size_t>(i)] = (i + 1) % every != 0;
  }
  const auto first_full = std::find(slides.begin(), slides.end(), false);
  if (first_full == slides.begin() && std::find(slides.begin(), slides.end(), true) == slides.end()) return;  // none
  s.sliding_window = window;
  s.sliding_window_pattern = first_full == slides.end() ? 0 : (first_full - slides.begin()) + 1;
  for (int64_t i = 0; i < s.n_layer; ++i) {
    if (s.layer_slides(i) != slides[static_cast<size_t>(i)]) {
      r.fail(
          "its sliding layers (layer_types) do not repeat as every N-th layer global (hftrain's "
          "model.sliding_window_pattern): layer " +
              std::to_string(i) + " breaks the pattern",
          "hftrain reads sliding windows on every layer, or on all layers but every N-th (Gemma)");
    }
  }
}

ModelSpec read_gpt2(const Reader& r) {
  ModelSpec s;
  s.arch = ModelArch::kGpt2;
  s.n_layer = r.positive("n_layer");
  s.n_head = r.positive("n_head");
  s.n_kv_head = s.n_head;
  s.d_model = r.positive("n_embd");
  s.d_ff = r.positive("n_inner", 4 * s.d_model);
  s.max_seq_len = r.positive("n_positions");
  s.vocab_size = r.positive("vocab_size");
  s.norm_eps = r.number("layer_norm_epsilon", 1e-5);
  s.tie_embeddings = r.boolean("tie_word_embeddings", true);
  s.init_std = r.number("initializer_range", 0.02);
  s.attention_bias = AttentionBias::kAll;
  s.mlp_bias = true;
  const std::string act = r.string("activation_function", "gelu_new");
  unsupported_if(r, act != "gelu_new" && act != "gelu_pytorch_tanh", "activation_function is " + act);
  unsupported_if(r, r.boolean("scale_attn_by_inverse_layer_idx", false), "scale_attn_by_inverse_layer_idx is on");
  unsupported_if(r, !r.boolean("scale_attn_weights", true), "scale_attn_weights is off");
  return s;
}

ModelSpec read_llama(const Reader& r, LlamaFamily moe_family) {
  const LlamaFamily family = dense_block(moe_family);
  ModelSpec s;
  s.arch = ModelArch::kLlama;
  s.n_layer = r.positive("num_hidden_layers");
  s.n_head = r.positive("num_attention_heads");
  s.n_kv_head = r.positive("num_key_value_heads", s.n_head);
  s.d_model = r.positive("hidden_size");
  s.d_ff = r.positive("intermediate_size");
  s.max_seq_len = r.positive("max_position_embeddings");
  s.vocab_size = r.positive("vocab_size");
  const bool gemma = family == LlamaFamily::kGemma2 || family == LlamaFamily::kGemma3;
  s.norm_eps = r.number("rms_norm_eps", family == LlamaFamily::kOlmo2 || family == LlamaFamily::kPhi3 ? 1e-5 : 1e-6);
  s.tie_embeddings = r.boolean("tie_word_embeddings", gemma);
  s.init_std = r.number("initializer_range", 0.02);
  // Llama's attention_bias covers all four projections; Mistral has none; Qwen2 has q, k and v only.
  switch (family) {
    case LlamaFamily::kLlama:
      s.attention_bias = r.boolean("attention_bias", false) ? AttentionBias::kAll : AttentionBias::kNone;
      s.mlp_bias = r.boolean("mlp_bias", false);
      break;
    case LlamaFamily::kMistral:
      s.attention_bias = AttentionBias::kNone;
      s.mlp_bias = false;
      break;
    case LlamaFamily::kQwen2:
      s.attention_bias = AttentionBias::kQkv;
      s.mlp_bias = false;
      break;
    case LlamaFamily::kQwen3:  // attention_bias covers all four projections, as Llama's
      s.attention_bias = r.boolean("attention_bias", false) ? AttentionBias::kAll : AttentionBias::kNone;
      s.mlp_bias = false;
      s.qk_norm = config::QkNorm::kHead;
      break;
    case LlamaFamily::kOlmo2:  // norms on the sublayers' outputs, q/k norms over the whole projections
      s.attention_bias = r.boolean("attention_bias", false) ? AttentionBias::kAll : AttentionBias::kNone;
      s.mlp_bias = false;
      s.qk_norm = config::QkNorm::kProjection;
      s.norm_placement = config::NormPlacement::kPost;
      break;
    case LlamaFamily::kPhi3:  // Llama's block under fused names: qkv_proj, gate_up_proj
      s.attention_bias = AttentionBias::kNone;
      s.mlp_bias = false;
      s.fused_projections = true;
      break;
    case LlamaFamily::kGemma2:  // (1 + w) RMSNorms around both sublayers, GeGLU, scaled embeddings,
    case LlamaFamily::kGemma3:  // soft-caps (Gemma 2's on by default), per-head q/k norms (Gemma 3)
      s.attention_bias = r.boolean("attention_bias", false) ? AttentionBias::kAll : AttentionBias::kNone;
      s.mlp_bias = false;
      s.norm_placement = config::NormPlacement::kSandwich;
      s.norm_unit_offset = true;
      s.scale_embeddings = true;
      s.activation = config::Activation::kGeluTanh;
      s.query_pre_attn_scalar = r.number("query_pre_attn_scalar", 256);
      s.final_logit_softcapping =
          number_or_off(r, "final_logit_softcapping", family == LlamaFamily::kGemma2 ? 30.0 : 0.0);
      // Gemma 3's config has attn_logit_softcapping too, but transformers' Gemma3Attention never
      // applies it: read as transformers computes, without.
      if (family == LlamaFamily::kGemma2) s.attn_logit_softcapping = number_or_off(r, "attn_logit_softcapping", 50.0);
      unsupported_if(r, r.boolean("use_bidirectional_attention", false), "use_bidirectional_attention is on");
      if (family == LlamaFamily::kGemma3) s.qk_norm = config::QkNorm::kHead;
      break;
    case LlamaFamily::kMixtral:  // never: read as their dense block (dense_block), experts after
    case LlamaFamily::kQwen2Moe:
    case LlamaFamily::kQwen3Moe:
      break;
  }
  if (family == LlamaFamily::kGemma3) {
    const Json rope = gemma3_rope(r, s);
    read_rope(Reader(rope, r.place()), s);
  } else {
    read_rope(r, s);
  }
  if (moe_family == LlamaFamily::kQwen2Moe) {  // Qwen2-MoE's qkv_bias (on by default) for Qwen2's fixed ones
    s.attention_bias = r.boolean("qkv_bias", true) ? AttentionBias::kQkv : AttentionBias::kNone;
  }
  read_sliding_window(r, s, moe_family);
  if (moe_family != family) read_experts(r, s, moe_family);
  if (s.sliding_window == 0) s.rope_local_theta = 0;  // no sliding layers to rotate otherwise
  if (s.rope_local_theta == s.rope_theta && s.rope_scaling.type == RopeType::kDefault) s.rope_local_theta = 0;
  // Gemma names the activation hidden_activation (gelu_pytorch_tanh); the others hidden_act (silu).
  const char* act_key = gemma ? "hidden_activation" : "hidden_act";
  const std::string act = r.string(act_key, gemma ? "gelu_pytorch_tanh" : "silu");
  unsupported_if(r, act != (gemma ? "gelu_pytorch_tanh" : "silu"), std::string(act_key) + " is " + act);
  // head_dim: transformers' default is hidden_size / num_attention_heads, but Qwen3Config's is
  // 128 and Gemma's 256.
  const int64_t derived = s.d_model % s.n_head == 0 ? s.d_model / s.n_head : 0;
  const int64_t head_dim = r.positive("head_dim", family == LlamaFamily::kQwen3 ? 128 : gemma ? 256 : derived);
  if (head_dim == 0) r.fail("`hidden_size` is not divisible by `num_attention_heads` and there is no `head_dim`");
  if (head_dim != derived) s.explicit_head_dim = head_dim;
  // What RoPE rotates must be pairs (an odd head_dim is fine when a partial factor leaves it even).
  unsupported_if(r, s.partial_rotary_factor > 1 || s.rotary_dim() < 2 || s.rotary_dim() % 2 != 0,
                 "RoPE would rotate " + std::to_string(s.rotary_dim()) + " dimensions of each head (head_dim " +
                     std::to_string(head_dim) + " x partial_rotary_factor " + number(s.partial_rotary_factor) +
                     "), not an even number (RoPE rotates pairs)");
  if (s.rope_scaling.type == RopeType::kLongrope) {
    const auto pairs = static_cast<size_t>(s.rotary_dim() / 2);
    for (const auto& [key, factors] :
         {std::pair<const char*, const std::vector<double>*>{"short_factor", &s.rope_scaling.short_factor},
          {"long_factor", &s.rope_scaling.long_factor}}) {
      if (factors->size() != pairs) {
        r.fail("longrope's `" + std::string(key) + "` has " + std::to_string(factors->size()) +
               " factors, but RoPE rotates " + std::to_string(pairs) + " pairs of each head");
      }
    }
  }
  return s;
}

}  // namespace

ModelSpec spec_from_hf_config(const std::string& json_text, const std::string& source) {
  const Json j = util::parse_json<util::CheckpointError>(json_text, source);
  if (!j.is_object()) throw util::CheckpointError(source + " is not a JSON object", "is it a config.json?");
  const Reader r = config_reader(j, source);
  std::string arch;
  if (j.contains("architectures") && j["architectures"].is_array() && j["architectures"].size() == 1 &&
      j["architectures"][0].is_string()) {
    arch = j["architectures"][0].get<std::string>();
  } else {
    arch = r.string("model_type", "");
  }
  // A reward model (transformers' *ForSequenceClassification): the same body with a score head of
  // num_labels outputs (id2label's entries; transformers' default 2).
  const bool scores = arch.ends_with(kSequenceClassification);
  if (scores) {
    arch = arch.substr(0, arch.size() - std::string(kSequenceClassification).size());
    if (arch == "Gemma3Text") arch = "Gemma3";
    arch += arch == "GPT2" ? "LMHeadModel" : "ForCausalLM";
  }
  const FamilyName* family = find_family(arch);
  ModelSpec s;
  if (arch == "GPT2LMHeadModel" || arch == "GPT2Model" || arch == "gpt2") {
    s = read_gpt2(r);
  } else if (family) {
    s = read_llama(r, family->family);
    // A Mistral block is a Llama block without biases: the name is kept for the export.
    if (family->family == LlamaFamily::kMistral) {
      s.hf_family = config::HfFamily::kMistral;
    }
  } else {
    r.fail("architecture `" + (arch.empty() ? std::string("(none)") : arch) + "` is not supported");
  }
  s.dropout = 0;
  if (scores) {
    s.score_outputs = j.contains("id2label") && j["id2label"].is_object() && !j["id2label"].empty()
                          ? static_cast<int64_t>(j["id2label"].size())
                          : r.positive("num_labels", 2);
    if (j.contains("pad_token_id") && j["pad_token_id"].is_number_integer()) s.pad_token_id = r.integer("pad_token_id");
  }
  if ((s.explicit_head_dim == 0 && s.d_model % s.n_head != 0) || s.n_head % s.n_kv_head != 0) {
    r.fail("the head counts do not divide the sizes");
  }
  return s;
}

std::string hf_config_json(const ModelSpec& s, const HfTokenIds& ids) {
  OrderedJson j;
  if (s.arch == ModelArch::kGpt2) {
    j = {{"architectures", {s.score_outputs > 0 ? "GPT2ForSequenceClassification" : "GPT2LMHeadModel"}},
         {"model_type", "gpt2"},
         {"vocab_size", s.vocab_size},
         {"n_positions", s.max_seq_len},
         {"n_embd", s.d_model},
         {"n_layer", s.n_layer},
         {"n_head", s.n_head},
         {"n_inner", s.d_ff},
         {"activation_function", "gelu_new"},  // the tanh approximation, as blocks.cpp computes it
         {"layer_norm_epsilon", s.norm_eps},
         {"resid_pdrop", s.dropout},
         {"embd_pdrop", s.dropout},
         {"attn_pdrop", s.dropout},
         {"initializer_range", s.init_std}};
  } else {
    const LlamaFamily family = export_family(s);
    const FamilyName& name = family_name(family);
    const LlamaFamily block = dense_block(family);
    const bool qwen = block == LlamaFamily::kQwen2 || block == LlamaFamily::kQwen3;
    const bool gemma = block == LlamaFamily::kGemma2 || block == LlamaFamily::kGemma3;
    const std::string scorer = (family == LlamaFamily::kGemma3 ? "Gemma3Text" : name.name) + kSequenceClassification;
    j = {{"architectures", {s.score_outputs > 0 ? scorer : name.name + "ForCausalLM"}},
         {"model_type", name.model_type},
         {"vocab_size", s.vocab_size},
         {"max_position_embeddings", s.max_seq_len},
         {"hidden_size", s.d_model},
         {"intermediate_size", s.d_ff},
         {"num_hidden_layers", s.n_layer},
         {"num_attention_heads", s.n_head},
         {"num_key_value_heads", s.n_kv_head},
         {"head_dim", s.head_dim()},
         {gemma ? "hidden_activation" : "hidden_act", gemma ? "gelu_pytorch_tanh" : "silu"},
         {"rms_norm_eps", s.norm_eps},
         {"rope_theta", s.rope_theta},  // transformers 4.x
         {"partial_rotary_factor", s.partial_rotary_factor}};
    if (family == LlamaFamily::kGemma3) {  // 5.x: per layer type
      OrderedJson local = s.rope_local_theta > 0
                              ? OrderedJson{{"rope_type", "default"}, {"rope_theta", s.rope_local_theta}}
                              : rope_json(s, true);
      j["rope_parameters"] = {{"full_attention", rope_json(s, true)}, {"sliding_attention", local}};
      j["rope_local_base_freq"] = s.rope_local_theta > 0 ? s.rope_local_theta : s.rope_theta;  // 4.x
    } else {
      j["rope_parameters"] = rope_json(s, true);  // 5.x
    }
    if (s.rope_scaling.type != RopeType::kDefault) j["rope_scaling"] = rope_json(s, false);  // 4.x
    // Which layers slide: transformers 5 reads layer_types, Mistral and Phi-3 slide everywhere.
    OrderedJson layer_types = OrderedJson::array();
    for (int64_t i = 0; i < s.n_layer; ++i)
      layer_types.push_back(s.layer_slides(i) ? "sliding_attention" : "full_attention");
    const OrderedJson window = s.sliding_window > 0 ? OrderedJson(s.sliding_window) : OrderedJson(nullptr);
    if (qwen) {
      j["use_sliding_window"] = s.sliding_window > 0;
      j["sliding_window"] = window;
      j["max_window_layers"] = s.n_layer;
      if (s.sliding_window > 0) j["layer_types"] = layer_types;
    } else if (block == LlamaFamily::kMistral || family == LlamaFamily::kPhi3) {
      j["sliding_window"] = window;
    } else if (gemma) {
      j["sliding_window"] = window;
      j["layer_types"] = layer_types;
      // An integer in Gemma's configs (transformers checks the type).
      const double scalar = s.query_pre_attn_scalar > 0 ? s.query_pre_attn_scalar : static_cast<double>(s.head_dim());
      if (scalar != std::floor(scalar)) {
        no_family("a fractional query_pre_attn_scalar (" + number(scalar) + ")",
                  "export Gemma models with a whole model.query_pre_attn_scalar");
      }
      j["query_pre_attn_scalar"] = static_cast<int64_t>(scalar);
      const auto cap = [](double v) { return v > 0 ? OrderedJson(v) : OrderedJson(nullptr); };
      j["final_logit_softcapping"] = cap(s.final_logit_softcapping);
      j["attn_logit_softcapping"] = cap(s.attn_logit_softcapping);
    }
    if (family == LlamaFamily::kPhi3) {
      j["resid_pdrop"] = s.dropout;
      j["embd_pdrop"] = s.dropout;
      if (s.rope_scaling.type == RopeType::kLongrope) {  // Phi3Config reads it here too
        j["original_max_position_embeddings"] = s.rope_scaling.original_max_seq_len;
      }
    }
    if (block != LlamaFamily::kQwen2 && block != LlamaFamily::kMistral && family != LlamaFamily::kPhi3) {
      j["attention_bias"] = s.attention_biases() == AttentionBias::kAll;
    }
    if (family == LlamaFamily::kLlama) j["mlp_bias"] = s.mlp_biases();
    if (family == LlamaFamily::kMixtral) {  // intermediate_size is the experts' (every layer is MoE)
      j["intermediate_size"] = s.expert_d_ff;
      j["num_local_experts"] = s.n_experts;
      j["num_experts_per_tok"] = s.experts_per_token;
      j["router_jitter_noise"] = 0.0;
    } else if (family == LlamaFamily::kQwen3Moe || family == LlamaFamily::kQwen2Moe) {
      if (family == LlamaFamily::kQwen2Moe) {
        j["qkv_bias"] = s.attention_biases() == AttentionBias::kQkv;
        j["shared_expert_intermediate_size"] = s.shared_expert_d_ff;
      }
      j["num_experts"] = s.n_experts;  // 4.x's name, and 5's num_local_experts
      j["num_local_experts"] = s.n_experts;
      j["num_experts_per_tok"] = s.experts_per_token;
      j["moe_intermediate_size"] = s.expert_d_ff;
      j["norm_topk_prob"] = s.moe_renormalize;
      j["decoder_sparse_step"] = s.moe_every;
      j["mlp_only_layers"] = OrderedJson::array();
    }
    if (s.n_experts > 0) {  // the load-balancing loss, when training adds it
      j["output_router_logits"] = s.router_aux_loss_coef > 0;
      j["router_aux_loss_coef"] = s.router_aux_loss_coef > 0 ? s.router_aux_loss_coef : 0.001;
    }
    j["attention_dropout"] = s.dropout;
    j["initializer_range"] = s.init_std;
  }
  if (s.score_outputs > 0) {  // num_labels, as transformers writes it
    OrderedJson id2label = OrderedJson::object(), label2id = OrderedJson::object();
    for (int64_t i = 0; i < s.score_outputs; ++i) {
      id2label[std::to_string(i)] = "LABEL_" + std::to_string(i);
      label2id["LABEL_" + std::to_string(i)] = i;
    }
    j["id2label"] = id2label;
    j["label2id"] = label2id;
  }
  j["tie_word_embeddings"] = s.tie_embeddings;
  j["bos_token_id"] = ids.bos;
  j["eos_token_id"] = ids.eos;
  j["pad_token_id"] = ids.pad;
  j["torch_dtype"] = "float32";
  return j.dump(2) + "\n";
}

}  // namespace hftrain::model
