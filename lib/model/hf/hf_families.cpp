// The Llama-block families hftrain reads and writes, and which one a spec exports as.
#include <algorithm>
#include <charconv>

#include "model/hf/hf_config_common.h"

namespace hftrain::model::hf {

using config::AttentionBias;

namespace {
const FamilyName kFamilies[] = {
    {"Llama", "llama", LlamaFamily::kLlama},          {"Mistral", "mistral", LlamaFamily::kMistral},
    {"Qwen2", "qwen2", LlamaFamily::kQwen2},          {"Qwen3", "qwen3", LlamaFamily::kQwen3},
    {"Olmo2", "olmo2", LlamaFamily::kOlmo2},          {"Phi3", "phi3", LlamaFamily::kPhi3},
    {"Gemma2", "gemma2", LlamaFamily::kGemma2},       {"Gemma3", "gemma3_text", LlamaFamily::kGemma3},
    {"Mixtral", "mixtral", LlamaFamily::kMixtral},    {"Qwen2Moe", "qwen2_moe", LlamaFamily::kQwen2Moe},
    {"Qwen3Moe", "qwen3_moe", LlamaFamily::kQwen3Moe}};

}  // namespace

std::string number(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);  // the shortest text that reads back as v
  return std::string(buf, r.ptr);
}

const FamilyName& family_name(LlamaFamily family) {
  return *std::find_if(std::begin(kFamilies), std::end(kFamilies),
                       [&](const FamilyName& f) { return f.family == family; });
}

const FamilyName* find_family(const std::string& arch) {
  const auto f = std::find_if(std::begin(kFamilies), std::end(kFamilies), [&](const FamilyName& n) {
    return arch == n.name + "ForCausalLM" || arch == n.name + "Model" || arch == n.model_type;
  });
  return f == std::end(kFamilies) ? nullptr : &*f;
}

[[noreturn]] void no_family(const std::string& what, const std::string& hint) {
  throw util::UsageError("no Hugging Face architecture hftrain writes has " + what, hint);
}

LlamaFamily export_family(const ModelSpec& s) {
  if (s.n_experts > 0) {
    const bool qwen = s.qk_norm == config::QkNorm::kHead;
    const bool shared = s.shared_expert_d_ff > 0;
    const bool block_fits = s.norm_placement == config::NormPlacement::kPre && !s.fused_projections &&
                            s.partial_rotary_factor == 1.0 && !s.mlp_biases() && !s.norm_unit_offset &&
                            !s.scale_embeddings && s.activation == config::Activation::kSilu &&
                            s.attn_logit_softcapping == 0 && s.final_logit_softcapping == 0 &&
                            s.query_pre_attn_scalar == 0 && s.rope_local_theta == 0;
    const bool mixtral = !qwen && !shared && s.qk_norm == config::QkNorm::kNone &&
                         s.attention_biases() == AttentionBias::kNone && s.moe_renormalize && s.moe_every == 1 &&
                         s.sliding_window_pattern == 0;
    const bool qwen2_moe = shared && s.qk_norm == config::QkNorm::kNone && s.attention_biases() != AttentionBias::kAll;
    const bool qwen3_moe = qwen && !shared && s.attention_biases() != AttentionBias::kQkv;
    if (!block_fits || !(mixtral || qwen2_moe || qwen3_moe)) {
      no_family("this mixture of experts: Mixtral's is Mistral's block with every layer MoE and renormalised "
                "weights, Qwen2-MoE's is Qwen2's with a shared expert (model.shared_expert_d_ff), Qwen3-MoE's is "
                "Qwen3's (model.qk_norm=head) without one",
                "export MoE models shaped as Mixtral (no biases, model.moe_every=1, model.moe_renormalize=true), "
                "Qwen2-MoE (a shared expert, attention_bias none or qkv) or Qwen3-MoE (model.qk_norm=head)");
    }
    return qwen2_moe ? LlamaFamily::kQwen2Moe : qwen ? LlamaFamily::kQwen3Moe : LlamaFamily::kMixtral;
  }
  const bool biases_none_or_all = s.attention_biases() != AttentionBias::kQkv && !s.mlp_biases();
  const bool gemma_options = s.norm_unit_offset || s.scale_embeddings || s.activation != config::Activation::kSilu ||
                             s.query_pre_attn_scalar > 0 || s.attn_logit_softcapping > 0 ||
                             s.final_logit_softcapping > 0 || s.rope_local_theta > 0 ||
                             s.norm_placement == config::NormPlacement::kSandwich;
  if (gemma_options) {
    const bool whole = s.norm_unit_offset && s.scale_embeddings && s.activation == config::Activation::kGeluTanh &&
                       s.norm_placement == config::NormPlacement::kSandwich &&
                       s.qk_norm != config::QkNorm::kProjection && biases_none_or_all && !s.fused_projections &&
                       s.partial_rotary_factor == 1.0;
    if (!whole) {
      no_family("part of Gemma's block (model.norm_unit_offset, model.scale_embeddings, model.activation=gelu_tanh, "
                "model.norm_placement=sandwich, soft-caps, model.query_pre_attn_scalar, model.rope_local_theta) "
                "without the rest, or with biases, fused projections or a partial rotary factor",
                "export Gemma models with all of model.norm_unit_offset=true model.scale_embeddings=true "
                "model.activation=gelu_tanh model.norm_placement=sandwich, model.qk_norm none (Gemma 2) or head "
                "(Gemma 3), attention biases none or all and no MLP biases");
    }
    if (s.qk_norm == config::QkNorm::kHead) {
      if (s.attn_logit_softcapping > 0) {
        no_family("Gemma 3's block with attention soft-capping (transformers' Gemma 3 never applies "
                  "attn_logit_softcapping)",
                  "unset model.attn_logit_softcapping to export as Gemma 3, or model.qk_norm=none for Gemma 2");
      }
      return LlamaFamily::kGemma3;
    }
    if (s.rope_local_theta > 0) {
      no_family("Gemma 2's block with a RoPE base of the sliding layers' own (model.rope_local_theta)",
                "set model.qk_norm=head (Gemma 3), or unset model.rope_local_theta");
    }
    return LlamaFamily::kGemma2;
  }
  const bool qwen3 = s.qk_norm == config::QkNorm::kHead;
  const bool olmo2 = s.qk_norm == config::QkNorm::kProjection;
  if (s.fused_projections && (qwen3 || olmo2 || s.attention_biases() != AttentionBias::kNone || s.mlp_biases())) {
    no_family("fused q/k/v and gate/up tensors (Phi-3) with biases or q/k norms",
              "export models with model.fused_projections=true and no biases or q/k norms (Phi-3), or "
              "model.fused_projections=false");
  }
  if ((s.norm_placement == config::NormPlacement::kPost) != olmo2) {
    no_family(std::string("model.norm_placement=") + norm_placement_name(s.norm_placement) +
                  " with model.qk_norm=" + qk_norm_name(s.qk_norm),
              "export models with post-norms and q/k norms over the projections (OLMo 2), or pre-norms (Llama, "
              "Qwen2, Qwen3)");
  }
  if ((olmo2 || qwen3) && !biases_none_or_all) {
    no_family(std::string(olmo2 ? "OLMo 2's norms" : "per-head q/k norms (model.qk_norm=head, Qwen3)") + " with " +
                  (s.mlp_biases() ? "MLP biases" : "query/key/value biases alone"),
              "export models with model.attention_bias none or all and model.mlp_bias=false");
  }
  const bool qwen2 = !qwen3 && !olmo2 && s.attention_biases() == AttentionBias::kQkv;
  if (qwen2 && s.mlp_biases()) {
    no_family("query/key/value and MLP biases without output biases (model.attention_bias=qkv with "
              "model.mlp_bias=true)",
              "export models with attention_bias qkv and no MLP biases (Qwen2), or all and any (Llama)");
  }
  const LlamaFamily family = qwen3               ? LlamaFamily::kQwen3
                             : olmo2             ? LlamaFamily::kOlmo2
                             : s.fused_projections ? LlamaFamily::kPhi3
                             : qwen2             ? LlamaFamily::kQwen2
                                                 : LlamaFamily::kLlama;
  // A Llama block without biases is Mistral's too: a model read as Mistral exports as one.
  const bool mistral_block =
      family == LlamaFamily::kLlama && s.attention_biases() == AttentionBias::kNone && !s.mlp_biases();
  if (s.sliding_window == 0) {
    return mistral_block && s.hf_family == config::HfFamily::kMistral ? LlamaFamily::kMistral : family;
  }
  // Sliding windows: Qwen's on any layers, Mistral's and Phi-3's on all, OLMo 2 and Llama none
  // (a Llama without biases is a Mistral).
  if (family == LlamaFamily::kQwen2 || family == LlamaFamily::kQwen3) return family;
  if ((mistral_block || family == LlamaFamily::kPhi3) && s.sliding_window_pattern == 0) {
    return mistral_block ? LlamaFamily::kMistral : family;
  }
  no_family(std::string("a sliding window (model.sliding_window) ") +
                (s.sliding_window_pattern != 0 ? "on some layers only" : "") + " in " + family_name(family).name +
                "'s block",
            "Mistral and Phi-3 slide on every layer (model.sliding_window_pattern=0), Qwen2/Qwen3 and Gemma on any; "
            "unset model.sliding_window to export this model");
}

}  // namespace hftrain::model::hf
