// Hugging Face config.json both ways (Llama, Mistral, Qwen2: biases, sliding windows, RoPE
// scaling in transformers 5's rope_parameters and 4.x's rope_scaling), the model.* keys that hold
// the same options, and the RoPE tables each scaling type gives.
#include "../torch_catch.h"  // first: see the file

#include <cmath>
#include <numbers>

#include "../config/helpers.h"
#include "model/hf/hf_config.h"
#include "model/decoder/transformer.h"
#include "model/hf/hf_modules.h"
#include "model/rope.h"
#include "model/spec.h"

using namespace hftrain;
using Catch::Matchers::Contains;
using config::AttentionBias;
using config::RopeType;

namespace {

// A Llama-family config.json with `extra` fields appended (", ..." JSON members).
std::string family(const std::string& arch, const std::string& extra = "") {
  return R"({"architectures": [")" + arch + R"("], "num_hidden_layers": 2, "num_attention_heads": 4,
             "num_key_value_heads": 2, "hidden_size": 32, "intermediate_size": 40, "max_position_embeddings": 64,
             "vocab_size": 100)" + extra + "}";
}

model::ModelSpec read(const std::string& json) { return model::spec_from_hf_config(json, "x/config.json"); }

std::string error(const std::string& json) {
  try {
    read(json);
  } catch (const util::CheckpointError& e) {
    return e.what();
  }
  return "no error";
}

std::string config_error(const std::vector<std::string>& overrides) {
  try {
    model::ModelSpec::from_config(test::resolve(test::kMinimal, overrides).values.model);
  } catch (const util::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("Qwen2, Mistral and Llama biases", "[model][hf]") {
  const auto qwen2 = read(family("Qwen2ForCausalLM", R"(, "tie_word_embeddings": true)"));
  CHECK(qwen2.arch == config::ModelArch::kLlama);
  CHECK(qwen2.attention_biases() == AttentionBias::kQkv);
  CHECK_FALSE(qwen2.mlp_biases());
  CHECK(qwen2.tie_embeddings);
  CHECK_FALSE(read(family("Qwen2ForCausalLM")).tie_embeddings);
  const auto llama = read(family("LlamaForCausalLM", R"(, "attention_bias": true, "mlp_bias": true)"));
  CHECK(llama.attention_biases() == AttentionBias::kAll);
  CHECK(llama.mlp_biases());
  const auto plain = read(family("LlamaForCausalLM"));
  CHECK(plain.attention_biases() == AttentionBias::kNone);
  CHECK_FALSE(plain.mlp_biases());
  // Mistral has no biases whatever attention_bias says (transformers ignores it there).
  CHECK(read(family("MistralForCausalLM", R"(, "attention_bias": true)")).attention_biases() == AttentionBias::kNone);
}

TEST_CASE("sliding windows: which layers slide, from each family's keys", "[model][hf]") {
  CHECK(read(family("MistralForCausalLM", R"(, "sliding_window": null)")).sliding_window == 0);
  // Mistral slides on every layer.
  const auto mistral =
      read(family("MistralForCausalLM", R"(, "sliding_window": 4096, "max_position_embeddings": 32768)"));
  CHECK(mistral.sliding_window == 4096);
  CHECK(mistral.sliding_window_pattern == 0);
  CHECK((mistral.layer_slides(0) && mistral.layer_slides(1)));
  CHECK_THAT(model::hf_config_json(mistral, {}),
             Contains("\"MistralForCausalLM\"") && Contains("\"sliding_window\": 4096"));
  // Llama has no sliding window: a Llama with one exports as Mistral; with biases, as nothing.
  auto biased = mistral;
  biased.attention_bias = AttentionBias::kAll;
  CHECK_THROWS_AS(model::hf_config_json(biased, {}), util::UsageError);
  // Qwen2 slides only with use_sliding_window, and only in the layers from max_window_layers on.
  CHECK(read(family("Qwen2ForCausalLM", R"(, "sliding_window": 8)")).sliding_window == 0);
  CHECK(read(family("Qwen2ForCausalLM", R"(, "use_sliding_window": true, "sliding_window": 8, "max_window_layers": 2)"))
            .sliding_window == 0);
  const auto all =
      read(family("Qwen2ForCausalLM", R"(, "use_sliding_window": true, "sliding_window": 8, "max_window_layers": 0)"));
  CHECK(all.sliding_window == 8);
  CHECK(read(model::hf_config_json(all, {})).same_shape(all));
  // Layer 0 global and layer 1 sliding: no "every N-th layer global" pattern.
  CHECK_THAT(
      error(family("Qwen2ForCausalLM", R"(, "use_sliding_window": true, "sliding_window": 8, "max_window_layers": 1)")),
      Contains("layer 1 breaks the pattern"));
  CHECK_THAT(error(family("Qwen2ForCausalLM", R"(, "use_sliding_window": true, "sliding_window": 8,
                                                 "layer_types": ["full_attention", "sliding_attention"])")),
             Contains("layer_types"));
  CHECK_THAT(error(family("Qwen2ForCausalLM", R"(, "use_sliding_window": true, "sliding_window": 8,
                                                 "layer_types": ["full_attention", "chunked_attention"])")),
             Contains("`layer_types` has \"chunked_attention\""));
  CHECK_THAT(error(family("Qwen2ForCausalLM", R"(, "use_sliding_window": true, "sliding_window": 8,
                                                 "layer_types": ["full_attention"])")),
             Contains("not a list of num_hidden_layers entries"));
  CHECK(read(family("Qwen2ForCausalLM", R"(, "use_sliding_window": true, "sliding_window": 8,
                                           "layer_types": ["full_attention", "full_attention"])")).sliding_window == 0);
  // Gemma: every other layer global (Gemma 2), every sliding_window_pattern-th (Gemma 3, default 6).
  const auto gemma2 = read(family("Gemma2ForCausalLM", R"(, "num_hidden_layers": 4, "sliding_window": 16)"));
  CHECK(gemma2.sliding_window_pattern == 2);
  CHECK((gemma2.layer_slides(0) && !gemma2.layer_slides(1) && gemma2.layer_slides(2) && !gemma2.layer_slides(3)));
  const auto gemma3 = read(family("Gemma3ForCausalLM", R"(, "num_hidden_layers": 7, "sliding_window_pattern": 3)"));
  CHECK(gemma3.sliding_window == 4096);  // Gemma3TextConfig's default
  CHECK(gemma3.sliding_window_pattern == 3);
  CHECK(read(family("Gemma3ForCausalLM", R"(, "num_hidden_layers": 7)")).sliding_window_pattern == 6);
}

TEST_CASE("RoPE scaling from rope_parameters (transformers 5) and rope_scaling (4.x)", "[model][hf]") {
  const auto llama3 =
      read(family("LlamaForCausalLM", R"(, "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0,
      "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 16})"));
  CHECK(llama3.rope_theta == 500000.0);
  CHECK(llama3.rope_scaling.type == RopeType::kLlama3);
  CHECK(llama3.rope_scaling.factor == 8.0);
  CHECK(llama3.rope_scaling.original_max_seq_len == 16);
  const auto linear =
      read(family("LlamaForCausalLM", R"(, "rope_theta": 5000.0, "rope_scaling": {"type": "linear", "factor": 2.0})"));
  CHECK(linear.rope_theta == 5000.0);
  CHECK(linear.rope_scaling.type == RopeType::kLinear);
  CHECK(linear.rope_scaling.factor == 2.0);
  // yarn's defaults: the original length is the model's, the attention factor 0.1 ln(factor) + 1.
  const auto yarn = read(family("Qwen2ForCausalLM", R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4.0})"));
  CHECK(yarn.rope_scaling.type == RopeType::kYarn);
  CHECK(yarn.rope_scaling.original_max_seq_len == 64);
  CHECK(yarn.rope_scaling.attention_factor == Approx(0.1 * std::log(4.0) + 1.0));
  CHECK(yarn.rope_scaling.beta_fast == 32.0);
  CHECK(yarn.rope_scaling.truncate);
  const auto mscale = read(family("LlamaForCausalLM", R"(, "rope_parameters": {"rope_type": "yarn", "factor": 4.0,
      "mscale": 0.8, "mscale_all_dim": 0.5, "original_max_position_embeddings": 16, "truncate": false})"));
  CHECK(mscale.rope_scaling.attention_factor ==
        Approx((0.08 * std::log(4.0) + 1.0) / (0.05 * std::log(4.0) + 1.0)));
  CHECK_FALSE(mscale.rope_scaling.truncate);
  // transformers 5 lets rope_scaling win over rope_parameters.
  CHECK(read(family("LlamaForCausalLM", R"(, "rope_parameters": {"rope_type": "default"},
                                           "rope_scaling": {"type": "dynamic", "factor": 2.0})"))
            .rope_scaling.type == RopeType::kDynamic);
  // longrope (Phi-3): per-pair factors, one per rotated pair (head_dim 8: 4), the attention factor
  // from max / original when the config has neither factor nor attention_factor.
  const auto longrope = read(family("Phi3ForCausalLM", R"(, "original_max_position_embeddings": 16, "rope_scaling": {
      "type": "longrope", "short_factor": [1.0, 1.5, 2.0, 2.5], "long_factor": [1.0, 3.0, 5.0, 7.0]})"));
  CHECK(longrope.rope_scaling.type == RopeType::kLongrope);
  CHECK(longrope.rope_scaling.original_max_seq_len == 16);
  CHECK(longrope.rope_scaling.short_factor == std::vector<double>{1.0, 1.5, 2.0, 2.5});
  CHECK(longrope.rope_scaling.factor == 4.0);  // 64 / 16
  CHECK(longrope.rope_scaling.attention_factor == Approx(std::sqrt(1 + std::log(4.0) / std::log(16.0))));
  CHECK(read(model::hf_config_json(longrope, {})).same_shape(longrope));
  CHECK_THAT(model::shape_overrides(longrope), Contains("model.rope_scaling.short_factor=[1,1.5,2,2.5] "
                                                        "model.rope_scaling.long_factor=[1,3,5,7]"));
  // Refused by name: factors missing, of the wrong count, not positive; an unknown type.
  CHECK_THAT(error(family("LlamaForCausalLM", R"(, "rope_scaling": {"rope_type": "longrope", "factor": 2.0})")),
             Contains("rope_scaling.short_factor is missing"));
  CHECK_THAT(error(family("Phi3ForCausalLM", R"(, "rope_scaling": {"type": "longrope", "short_factor": [1.0, 1.0],
                                                "long_factor": [1.0, 1.0]})")),
             Contains("longrope's `short_factor` has 2 factors, but RoPE rotates 4 pairs"));
  CHECK_THAT(
      error(family("Phi3ForCausalLM", R"(, "rope_scaling": {"type": "longrope", "short_factor": [1.0, 1.0, 1.0, 0],
                                                "long_factor": [1.0, 1.0, 1.0, 1.0]})")),
      Contains("rope_scaling.short_factor[3] is 0, not a positive number"));
  CHECK_THAT(error(family("LlamaForCausalLM", R"(, "rope_scaling": {"rope_type": "ntk-by-parts", "factor": 2.0})")),
             Contains("RoPE scaling type `ntk-by-parts`"));
  CHECK_THAT(error(family("LlamaForCausalLM", R"(, "rope_scaling": {"rope_type": "linear"})")),
             Contains("rope_scaling.factor is missing"));
  CHECK(
      read(family("LlamaForCausalLM", R"(, "rope_parameters": {"rope_type": "default", "partial_rotary_factor": 0.5})"))
          .rotary_dim() == 4);
  CHECK_THAT(error(family("LlamaForCausalLM", R"(, "partial_rotary_factor": 1.5)")), Contains("partial_rotary_factor"));
  CHECK_THAT(error(family("LlamaForCausalLM", R"(, "rope_parameters": {"full_attention": {"rope_type": "default"}})")),
             Contains("per layer type"));
  CHECK_THAT(error(family("LlamaForCausalLM", R"(, "rope_scaling": {"type": "linear", "factor": 0.5})")),
             Contains("factor below 1"));
}

TEST_CASE("hf_config_json reads back to the same spec", "[model][hf]") {
  const std::vector<std::vector<std::string>> cases = {
      {"model.arch=gpt2", "model.d_model=48", "model.n_head=4", "model.d_ff=100", "model.tie_embeddings=false"},
      {"model.arch=llama", "model.n_kv_head=4", "model.attention_bias=qkv", "model.tie_embeddings=true"},
      {"model.arch=llama", "model.attention_bias=all", "model.mlp_bias=true", "model.rope_theta=500000",
       "model.rope_scaling.type=llama3", "model.rope_scaling.factor=8", "model.rope_scaling.original_max_seq_len=256",
       "model.rope_scaling.high_freq_factor=3.5"},
      {"model.arch=llama", "model.rope_scaling.type=yarn", "model.rope_scaling.factor=4",
       "model.rope_scaling.beta_fast=16", "model.rope_scaling.truncate=false",
       "model.rope_scaling.attention_factor=1.25"},
      {"model.arch=llama", "model.rope_scaling.type=linear", "model.rope_scaling.factor=2.5", "model.norm_eps=1e-5"},
      {"model.arch=llama", "model.rope_scaling.type=dynamic", "model.rope_scaling.factor=3"},
      {"model.arch=llama", "model.head_dim=16"},
      {"model.arch=llama", "model.qk_norm=head", "model.head_dim=12", "model.tie_embeddings=true"},
      {"model.arch=llama", "model.qk_norm=head", "model.attention_bias=all"},
      {"model.arch=llama", "model.qk_norm=projection", "model.norm_placement=post", "model.head_dim=10"},
      {"model.arch=llama", "model.sliding_window=32"},
      {"model.arch=llama", "model.attention_bias=qkv", "model.sliding_window=8", "model.sliding_window_pattern=3",
       "model.n_layer=5"},
      // Gemma 2 (soft-caps, every other layer global) and Gemma 3 (q/k norms, the sliding layers' own RoPE base).
      {"model.arch=llama", "model.norm_placement=sandwich", "model.norm_unit_offset=true",
       "model.scale_embeddings=true", "model.activation=gelu_tanh", "model.query_pre_attn_scalar=24",
       "model.attn_logit_softcapping=50", "model.final_logit_softcapping=30", "model.sliding_window=8",
       "model.sliding_window_pattern=2", "model.head_dim=16", "model.tie_embeddings=true"},
      {"model.arch=llama", "model.norm_placement=sandwich", "model.norm_unit_offset=true",
       "model.scale_embeddings=true", "model.activation=gelu_tanh", "model.qk_norm=head", "model.sliding_window=8",
       "model.sliding_window_pattern=6", "model.n_layer=7", "model.rope_theta=1000000", "model.rope_local_theta=10000",
       "model.rope_scaling.type=linear", "model.rope_scaling.factor=8", "model.final_logit_softcapping=30"},
      {"model.arch=llama", "model.norm_placement=sandwich", "model.norm_unit_offset=true",
       "model.scale_embeddings=true", "model.activation=gelu_tanh", "model.qk_norm=head",
       "model.rope_scaling.type=linear", "model.rope_scaling.factor=2"},
      // Mixtral (every layer MoE, intermediate_size is the experts') and Qwen3-MoE (dense layers between).
      {"model.arch=llama", "model.n_experts=4", "model.experts_per_token=2", "model.d_ff=64", "model.expert_d_ff=64",
       "model.sliding_window=16"},
      {"model.arch=llama", "model.qk_norm=head", "model.n_experts=8", "model.experts_per_token=3",
       "model.expert_d_ff=24", "model.moe_renormalize=false", "model.moe_every=2", "model.n_layer=4"},
  };
  for (const auto& overrides : cases) {
    const auto spec = model::ModelSpec::from_config(test::resolve(test::kMinimal, overrides).values.model);
    const std::string json = model::hf_config_json(spec, {1, 2, 3});
    INFO(json);
    const auto back = read(json);
    CHECK(back.same_shape(spec));
    CHECK(back.init_std == spec.init_std);
    // And through model.json.
    CHECK(model::ModelSpec::from_json(spec.to_json(), "model.json").same_shape(spec));
  }
  auto qwen2 = model::ModelSpec::from_config(
      test::resolve(test::kMinimal, {"model.arch=llama", "model.attention_bias=qkv"}).values.model);
  CHECK_THAT(model::hf_config_json(qwen2, {}), Contains("\"Qwen2ForCausalLM\""));
  qwen2.mlp_bias = true;
  CHECK_THROWS_AS(model::hf_config_json(qwen2, {}), util::UsageError);
  auto qwen3 = model::ModelSpec::from_config(
      test::resolve(test::kMinimal, {"model.arch=llama", "model.qk_norm=head", "model.head_dim=12"}).values.model);
  CHECK_THAT(model::hf_config_json(qwen3, {}), Contains("\"Qwen3ForCausalLM\"") && Contains("\"head_dim\": 12"));
  qwen3.attention_bias = AttentionBias::kQkv;  // Qwen3's attention_bias covers o_proj too
  CHECK_THROWS_AS(model::hf_config_json(qwen3, {}), util::UsageError);
}

TEST_CASE("a reward model's score head: *ForSequenceClassification both ways, model.json, the loaders",
          "[model][hf][preference]") {
  for (const auto& overrides : std::vector<std::vector<std::string>>{
           {"model.arch=gpt2", "model.d_model=48", "model.n_head=4"},
           {"model.arch=llama", "model.tie_embeddings=false"},
           {"model.arch=llama", "model.norm_placement=sandwich", "model.norm_unit_offset=true",
            "model.scale_embeddings=true", "model.activation=gelu_tanh", "model.qk_norm=head"}}) {
    auto spec = model::ModelSpec::from_config(test::resolve(test::kMinimal, overrides).values.model);
    const int64_t lm_parameters = spec.parameter_count();
    spec.score_outputs = 1;
    const std::string json = model::hf_config_json(spec, {1, 2, 3});
    INFO(json);
    CHECK_THAT(json, Contains("ForSequenceClassification\"") && Contains("\"LABEL_0\"") &&
                         Contains("\"pad_token_id\": 3"));
    CHECK(read(json).score_outputs == 1);
    CHECK(read(json).pad_token_id == 3);  // where transformers reads the score: kept with the model
    spec.pad_token_id = 3;
    CHECK(read(json).same_shape(spec));
    CHECK(model::ModelSpec::from_json(spec.to_json(), "model.json").score_outputs == 1);
    CHECK(model::ModelSpec::from_json(spec.to_json(), "model.json").pad_token_id == 3);
    // The score replaces the output layer: one row of d_model, the untied head's V x d_model gone.
    const int64_t head = spec.tie_embeddings ? 0 : spec.vocab_size * spec.d_model;
    CHECK(spec.parameter_count() == lm_parameters - head + spec.d_model);
    model::Transformer scorer(spec);
    int64_t counted = 0;
    for (const auto& [name, p] : scorer->parameters_by_name()) counted += p.numel();
    CHECK(counted == spec.parameter_count());
    const auto sources = model::hf_sources(spec);
    CHECK(sources.count("score.weight") == 1);
    CHECK(sources.count("lm_head.weight") == 0);
    CHECK(model::hf_config_json(spec, {}).find("ForCausalLM") == std::string::npos);
    // The scores of a forward: one per position.
    const auto scores = scorer->forward(torch::tensor({{1, 2, 3}}, torch::kLong));
    CHECK(scores.sizes() == torch::IntArrayRef({1, 3, 1}));
  }
  // Gemma 3's text model scores as Gemma3TextForSequenceClassification; transformers' default num_labels is 2.
  CHECK(read(family("Gemma3TextForSequenceClassification", R"(, "id2label": {"0": "LABEL_0"})")).score_outputs == 1);
  CHECK(read(family("MistralForSequenceClassification")).score_outputs == 2);
  CHECK(read(family("LlamaForCausalLM")).score_outputs == 0);
  CHECK_THAT(error(family("LlamaForTokenClassification")), Contains("LlamaForTokenClassification"));
}

TEST_CASE("Mixtral and Qwen3-MoE configs: experts, their defaults, and what is refused", "[model][hf]") {
  const auto mixtral = read(family("MixtralForCausalLM", R"(, "num_local_experts": 8, "num_experts_per_tok": 2)"));
  CHECK((mixtral.n_experts == 8 && mixtral.experts_per_token == 2 && mixtral.expert_d_ff == 40));
  CHECK((mixtral.moe_renormalize && mixtral.moe_every == 1));
  CHECK(mixtral.attention_biases() == AttentionBias::kNone);
  CHECK(model::hf_sources(mixtral).at("layers.1.moe.experts_gate_up").names[1] ==
        "layers.1.block_sparse_moe.experts.0.w3.weight");
  CHECK_THAT(model::hf_config_json(mixtral, {}),
             Contains("\"MixtralForCausalLM\"") && Contains("\"num_local_experts\": 8"));
  // Qwen3-MoE: 4.x's num_experts, or 5's num_local_experts; norm_topk_prob off by default.
  const auto qwen = read(family("Qwen3MoeForCausalLM", R"(, "num_experts": 16, "num_experts_per_tok": 4,
                                                        "moe_intermediate_size": 12, "decoder_sparse_step": 2)"));
  CHECK((qwen.n_experts == 16 && qwen.experts_per_token == 4 && qwen.expert_d_ff == 12 && qwen.moe_every == 2));
  CHECK_FALSE(qwen.moe_renormalize);
  CHECK(qwen.qk_norm == config::QkNorm::kHead);
  CHECK((qwen.layer_is_moe(1) && !qwen.layer_is_moe(0)));
  CHECK(read(family("Qwen3MoeForCausalLM", R"(, "num_local_experts": 6, "num_experts_per_tok": 2)")).n_experts == 6);
  CHECK(model::hf_sources(qwen).at("layers.0.mlp.gate_up_proj.weight").names[0] == "layers.0.mlp.gate_proj.weight");
  CHECK(model::hf_sources(qwen).at("layers.1.moe.router").names[0] == "layers.1.mlp.gate.weight");
  CHECK_THAT(model::shape_overrides(qwen), Contains("model.n_experts=16 model.experts_per_token=4 model.expert_d_ff=12 "
                                                    "model.moe_renormalize=false model.moe_every=2"));
  // The load-balancing loss only with output_router_logits (transformers' rule), default 0.001.
  CHECK(read(family("Qwen3MoeForCausalLM", R"(, "router_aux_loss_coef": 0.02)")).router_aux_loss_coef == 0);
  const auto aux = read(family("Qwen3MoeForCausalLM", R"(, "output_router_logits": true, "num_experts": 4,
                                                       "num_experts_per_tok": 2)"));
  CHECK(aux.router_aux_loss_coef == 0.001);
  CHECK_THAT(model::hf_config_json(aux, {}), Contains("\"output_router_logits\": true"));
  CHECK(read(model::hf_config_json(aux, {})).router_aux_loss_coef == 0.001);
  // What hftrain does not compute: jitter, dense layers listed, shared experts.
  for (const auto& [extra, needle] : std::vector<std::pair<std::string, std::string>>{
           {R"(, "mlp_only_layers": [0])", "mlp_only_layers"},
           {R"(, "shared_expert_intermediate_size": 16)", "shared experts outside Qwen2-MoE"},
           {R"(, "num_experts": 2, "num_experts_per_tok": 4)", "num_experts_per_tok"}}) {
    CHECK_THAT(error(family("Qwen3MoeForCausalLM", extra)), Contains(needle));
  }
  CHECK_THAT(error(family("MixtralForCausalLM", R"(, "router_jitter_noise": 0.1)")), Contains("router_jitter_noise"));
  // Exported only as the two classes hold them.
  auto biased = mixtral;
  biased.attention_bias = AttentionBias::kAll;
  CHECK_THROWS_WITH(model::hf_config_json(biased, {}), Contains("this mixture of experts"));
  auto stepped = mixtral;
  stepped.moe_every = 2;
  CHECK_THROWS_AS(model::hf_config_json(stepped, {}), util::UsageError);
}

TEST_CASE("Qwen2-MoE configs: the shared expert, qkv_bias, its sliding layers, and what is refused", "[model][hf]") {
  const auto q = read(family("Qwen2MoeForCausalLM", R"(, "num_experts": 8, "num_experts_per_tok": 2,
        "moe_intermediate_size": 12, "shared_expert_intermediate_size": 20)"));
  CHECK((q.n_experts == 8 && q.experts_per_token == 2 && q.expert_d_ff == 12 && q.shared_expert_d_ff == 20));
  CHECK_FALSE(q.moe_renormalize);
  CHECK(q.attention_biases() == AttentionBias::kQkv);  // qkv_bias defaults on
  CHECK(q.qk_norm == config::QkNorm::kNone);
  const auto sources = model::hf_sources(q);
  CHECK(sources.at("layers.0.moe.router").names[0] == "layers.0.mlp.gate.weight");
  CHECK(sources.at("layers.0.moe.shared.gate_up_proj.weight").names ==
        std::vector<std::string>{"layers.0.mlp.shared_expert.gate_proj.weight",
                                 "layers.0.mlp.shared_expert.up_proj.weight"});
  CHECK(sources.at("layers.1.moe.shared_gate.weight").names[0] == "layers.1.mlp.shared_expert_gate.weight");
  // LoRA can target the shared expert's linear layers, with their own sizes.
  bool found_down = false, found_gate = false;
  for (const auto& l : model::hf_linear_modules(q)) {
    if (l.name == "model.layers.0.mlp.shared_expert.down_proj") found_down = l.in_features == 20 && l.rows == 32;
    if (l.name == "model.layers.0.mlp.shared_expert_gate") found_gate = l.rows == 1 && l.in_features == 32;
  }
  CHECK((found_down && found_gate));
  // The shared expert's MLP and gate count in the parameters, and among those every token uses.
  auto no_shared = q;
  no_shared.shared_expert_d_ff = 0;
  const int64_t shared = 2 * (3 * 32 * 20 + 32);
  CHECK(q.parameter_count() - no_shared.parameter_count() == shared);
  CHECK(q.active_parameter_count() - no_shared.active_parameter_count() == shared);
  CHECK_THAT(model::shape_overrides(q), Contains("model.shared_expert_d_ff=20"));
  // Written back as Qwen2-MoE and read to the same spec, also without the biases.
  const std::string json = model::hf_config_json(q, {});
  CHECK_THAT(json, Contains("\"Qwen2MoeForCausalLM\"") && Contains("\"shared_expert_intermediate_size\": 20") &&
                       Contains("\"qkv_bias\": true"));
  CHECK(read(json).same_shape(q));
  CHECK(model::ModelSpec::from_json(q.to_json(), "model.json").same_shape(q));
  const auto unbiased = read(family("Qwen2MoeForCausalLM", R"(, "qkv_bias": false, "num_experts": 4,
                                                            "num_experts_per_tok": 2, "decoder_sparse_step": 2)"));
  CHECK(unbiased.attention_biases() == AttentionBias::kNone);
  CHECK(unbiased.shared_expert_d_ff == 5632);  // transformers' default
  CHECK(read(model::hf_config_json(unbiased, {})).same_shape(unbiased));
  // Sliding windows on the odd layers (from 1) below max_window_layers: every 2nd layer global.
  const auto sliding = read(family("Qwen2MoeForCausalLM", R"(, "use_sliding_window": true, "sliding_window": 5,
        "max_window_layers": 2, "num_experts": 4, "num_experts_per_tok": 2)"));
  CHECK((sliding.sliding_window == 5 && sliding.sliding_window_pattern == 2));
  CHECK(read(model::hf_config_json(sliding, {})).same_shape(sliding));
  // No class holds a shared expert with q/k norms (Qwen3-MoE has none) or with all attention biases.
  auto normed = q;
  normed.qk_norm = config::QkNorm::kHead;
  CHECK_THROWS_WITH(model::hf_config_json(normed, {}), Contains("this mixture of experts"));
  auto all_biases = q;
  all_biases.attention_bias = AttentionBias::kAll;
  CHECK_THROWS_AS(model::hf_config_json(all_biases, {}), util::UsageError);
  CHECK_THAT(error(family("Qwen2MoeForCausalLM", R"(, "shared_expert_intermediate_size": 0)")),
             Contains("shared_expert_intermediate_size"));
}

TEST_CASE("Gemma 2 and Gemma 3 configs: the block's options, defaults, and what no class holds", "[model][hf]") {
  const auto g2 = read(family("Gemma2ForCausalLM"));
  CHECK(g2.norm_placement == config::NormPlacement::kSandwich);
  CHECK((g2.norm_unit_offset && g2.scale_embeddings));
  CHECK(g2.activation == config::Activation::kGeluTanh);
  CHECK(g2.head_dim() == 256);  // Gemma2Config's default
  CHECK(g2.query_pre_attn_scalar == 256);
  CHECK(g2.attention_scale() == 1.0 / 16);
  CHECK((g2.final_logit_softcapping == 30 && g2.attn_logit_softcapping == 50));  // on by default
  CHECK(g2.tie_embeddings);
  CHECK(g2.qk_norm == config::QkNorm::kNone);
  // null turns a cap off; Gemma 3's attention cap is never applied by transformers, so never read.
  const auto uncapped =
      read(family("Gemma2ForCausalLM", R"(, "final_logit_softcapping": null, "attn_logit_softcapping": null)"));
  CHECK((uncapped.final_logit_softcapping == 0 && uncapped.attn_logit_softcapping == 0));
  const auto g3 =
      read(family("Gemma3ForCausalLM", R"(, "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0)"));
  CHECK((g3.attn_logit_softcapping == 0 && g3.final_logit_softcapping == 30));
  CHECK(g3.qk_norm == config::QkNorm::kHead);
  CHECK((g3.rope_theta == 1e6 && g3.rope_local_theta == 10000));  // Gemma3TextConfig's defaults
  // transformers 5 writes RoPE per layer type; the sliding layers may not scale.
  const auto per_type = read(family("Gemma3ForCausalLM", R"(, "rope_parameters": {
      "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
      "sliding_attention": {"rope_type": "default", "rope_theta": 5000.0}})"));
  CHECK((per_type.rope_scaling.type == RopeType::kLinear && per_type.rope_local_theta == 5000));
  CHECK_THAT(error(family("Gemma3ForCausalLM", R"(, "rope_parameters": {
      "full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
      "sliding_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 5000.0}})")),
             Contains("`rope_parameters.sliding_attention` scales RoPE"));
  CHECK_THAT(error(family("Gemma2ForCausalLM", R"(, "hidden_activation": "gelu")")),
             Contains("hidden_activation is gelu"));
  CHECK_THAT(error(family("Gemma2ForCausalLM", R"(, "use_bidirectional_attention": true)")),
             Contains("use_bidirectional_attention"));
  // Exported under the family's own names and config.
  CHECK_THAT(model::hf_config_json(g2, {}), Contains("\"Gemma2ForCausalLM\"") &&
                                                Contains("\"model_type\": \"gemma2\"") &&
                                                Contains("\"query_pre_attn_scalar\": 256") &&
                                                Contains("\"hidden_activation\": \"gelu_pytorch_tanh\""));
  CHECK_THAT(model::hf_config_json(g3, {}), Contains("\"model_type\": \"gemma3_text\"") &&
                                                Contains("\"rope_local_base_freq\": 10000"));
  CHECK(model::hf_sources(g2).at("layers.1.mlp_norm.weight").names ==
        std::vector<std::string>{"layers.1.pre_feedforward_layernorm.weight"});
  // Part of Gemma's block, Gemma 2 with a local RoPE base, Gemma 3 with an attention cap: no class.
  auto partial = g2;
  partial.scale_embeddings = false;
  CHECK_THROWS_WITH(model::hf_config_json(partial, {}), Contains("part of Gemma's block"));
  auto local = g2;
  local.rope_local_theta = 10000;
  CHECK_THROWS_AS(model::hf_config_json(local, {}), util::UsageError);
  auto capped = g3;
  capped.attn_logit_softcapping = 50;
  CHECK_THROWS_WITH(model::hf_config_json(capped, {}), Contains("never applies"));
  auto fractional = g2;
  fractional.query_pre_attn_scalar = 24.5;
  CHECK_THROWS_WITH(model::hf_config_json(fractional, {}), Contains("fractional query_pre_attn_scalar"));
  // The overrides name every option (two layers, both sliding under Gemma 3's pattern of 6: every
  // layer slides, pattern 0).
  CHECK_THAT(model::shape_overrides(g3), Contains("model.activation=gelu_tanh model.norm_unit_offset=true "
                                                  "model.scale_embeddings=true model.query_pre_attn_scalar=256 "
                                                  "model.final_logit_softcapping=30 model.sliding_window=4096 "
                                                  "model.sliding_window_pattern=0 model.rope_local_theta=10000"));
}

TEST_CASE("explicit head_dim (Mistral-NeMo, Llama) and Qwen3's per-head q/k norms", "[model][hf]") {
  const auto nemo = read(family("MistralForCausalLM", R"(, "head_dim": 16)"));
  CHECK(nemo.head_dim() == 16);
  CHECK(nemo.explicit_head_dim == 16);
  CHECK(nemo.qk_norm == config::QkNorm::kNone);
  // A head_dim equal to hidden_size / heads is the derived one: the spec compares equal to one without.
  CHECK(read(family("LlamaForCausalLM", R"(, "head_dim": 8)")).same_shape(read(family("LlamaForCausalLM"))));
  const auto qwen3 = read(family("Qwen3ForCausalLM", R"(, "head_dim": 12, "attention_bias": true)"));
  CHECK(qwen3.head_dim() == 12);
  CHECK(qwen3.qk_norm == config::QkNorm::kHead);
  CHECK(qwen3.attention_biases() == AttentionBias::kAll);
  CHECK_FALSE(qwen3.mlp_biases());
  // Qwen3Config's head_dim defaults to 128, not hidden_size / heads.
  CHECK(read(family("Qwen3ForCausalLM")).head_dim() == 128);
  CHECK_THAT(error(family("LlamaForCausalLM", R"(, "head_dim": 7)")),
             Contains("RoPE would rotate 7 dimensions of each head (head_dim 7 x partial_rotary_factor 1)"));
  CHECK_THAT(error(family("Qwen3ForCausalLM", R"(, "use_sliding_window": true, "sliding_window": 8,
                                                  "max_window_layers": 1)")),
             Contains("layer_types"));
  // The overrides that model.from's layer writes give the same spec back.
  const std::string o = model::shape_overrides(qwen3);
  CHECK_THAT(o, Contains("model.head_dim=12 model.qk_norm=head"));
  const auto olmo2 = read(family("Olmo2ForCausalLM"));
  CHECK(olmo2.qk_norm == config::QkNorm::kProjection);
  CHECK(olmo2.norm_placement == config::NormPlacement::kPost);
  CHECK(olmo2.norm_eps == 1e-5);  // Olmo2Config's default, not Llama's
  CHECK_THAT(model::shape_overrides(olmo2), Contains("model.qk_norm=projection model.norm_placement=post"));
  auto no_hf = olmo2;
  no_hf.norm_placement = config::NormPlacement::kPre;  // q/k norms over projections with pre-norms: no class
  CHECK_THROWS_AS(model::hf_config_json(no_hf, {}), util::UsageError);
  CHECK_THAT(model::hf_config_json(olmo2, {}), Contains("\"Olmo2ForCausalLM\""));
  const auto phi = read(family("Phi3ForCausalLM", R"(, "rope_parameters": {"rope_type": "default",
                                                      "rope_theta": 10000.0, "partial_rotary_factor": 0.5})"));
  CHECK(phi.fused_projections);
  CHECK(phi.rotary_dim() == 4);
  CHECK(model::hf_sources(phi).at("layers.0.attn.qkv_proj.weight").names ==
        std::vector<std::string>{"layers.0.self_attn.qkv_proj.weight"});
  CHECK_THAT(model::hf_config_json(phi, {}),
             Contains("\"Phi3ForCausalLM\"") && Contains("\"partial_rotary_factor\": 0.5"));
  CHECK(read(model::hf_config_json(phi, {})).same_shape(phi));
  CHECK_THAT(error(family("Phi3ForCausalLM", R"(, "partial_rotary_factor": 0.375)")), Contains("RoPE rotates pairs"));
  // A hidden size that heads do not divide is fine with a head_dim.
  CHECK(read(family("LlamaForCausalLM", R"(, "hidden_size": 30, "head_dim": 8)")).head_dim() == 8);
}

TEST_CASE("shape_overrides name the biases and RoPE scaling", "[model][hf]") {
  const auto spec = read(family("Qwen2ForCausalLM", R"(, "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                                       "original_max_position_embeddings": 16})"));
  const std::string o = model::shape_overrides(spec);
  CHECK_THAT(o, Contains("model.attention_bias=qkv model.mlp_bias=false model.rope_theta=10000 "
                         "model.rope_scaling.type=yarn model.rope_scaling.factor=4 "
                         "model.rope_scaling.original_max_seq_len=16"));
  // The overrides give the same spec back.
  std::vector<std::string> overrides;
  for (size_t start = 0, end; start < o.size(); start = end + 1) {
    end = o.find(' ', start);
    if (end == std::string::npos) end = o.size();
    overrides.push_back(o.substr(start, end - start));
  }
  CHECK(model::ModelSpec::from_config(test::resolve(test::kMinimal, overrides).values.model).same_shape(spec));
}

TEST_CASE("model.* combinations a family cannot have are refused by key", "[model][config]") {
  CHECK_THAT(config_error({"model.arch=gpt2", "model.attention_bias=qkv"}),
             Contains("model.arch=gpt2 always has biases"));
  CHECK_THAT(config_error({"model.arch=gpt2", "model.mlp_bias=false"}), Contains("model.mlp_bias=false"));
  CHECK_THAT(config_error({"model.arch=gpt2", "model.rope_scaling.type=linear", "model.rope_scaling.factor=2"}),
             Contains("model.rope_scaling.type"));
  CHECK_THAT(config_error({"model.arch=llama", "model.rope_scaling.type=yarn", "model.rope_scaling.factor=2",
                           "model.rope_scaling.original_max_seq_len=4096"}),
             Contains("model.rope_scaling.original_max_seq_len"));
  CHECK_THAT(config_error({"model.arch=llama", "model.rope_scaling.type=llama3", "model.rope_scaling.factor=2",
                           "model.rope_scaling.low_freq_factor=4"}),
             Contains("high_freq_factor > low_freq_factor"));
  CHECK(config_error({"model.arch=llama", "model.attention_bias=qkv", "model.mlp_bias=true"}) == "no error");
  CHECK(config_error({"model.arch=llama", "model.d_model=30", "model.n_head=4", "model.head_dim=8"}) == "no error");
  CHECK_THAT(config_error({"model.arch=gpt2", "model.head_dim=16"}), Contains("model.head_dim") && Contains("llama"));
  CHECK_THAT(config_error({"model.arch=gpt2", "model.qk_norm=head"}), Contains("model.qk_norm") && Contains("llama"));
  CHECK_THAT(config_error({"model.arch=gpt2", "model.sliding_window=8"}),
             Contains("model.sliding_window") && Contains("llama"));
  CHECK_THAT(config_error({"model.arch=gpt2", "model.final_logit_softcapping=30"}),
             Contains("model.final_logit_softcapping") && Contains("llama"));
  CHECK_THAT(config_error({"model.arch=llama", "model.rope_local_theta=10000"}),
             Contains("`model.rope_local_theta` describes the sliding layers, but `model.sliding_window` is unset"));
  CHECK_THAT(config_error({"model.arch=llama", "model.sliding_window_pattern=2"}),
             Contains("model.sliding_window_pattern"));
  CHECK_THAT(config_error({"model.arch=gpt2", "model.n_experts=4"}), Contains("model.n_experts") && Contains("llama"));
  CHECK_THAT(config_error({"model.arch=llama", "model.n_experts=2", "model.experts_per_token=3"}),
             Contains("`model.experts_per_token` (3) exceeds `model.n_experts` (2)"));
  CHECK_THAT(config_error({"model.arch=llama", "model.n_experts=4", "model.mlp_bias=true"}),
             Contains("experts have no biases"));
  CHECK_THAT(
      config_error({"model.arch=llama", "model.router_aux_loss_coef=0.01"}),
      Contains("`model.router_aux_loss_coef` weighs the routers' load-balancing loss, but the model has no experts"));
  CHECK_THAT(config_error({"model.arch=llama", "model.task=token_classification"}),
             Contains("`model.task` is token_classification, which an encoder (model.arch=bert) does"));
  CHECK(config_error({"model.arch=bert", "model.task=token_classification"}) == "no error");
  CHECK_THAT(config_error({"model.arch=gpt2", "model.encoder=roberta"}),
             Contains("`model.encoder` chooses a BERT-style encoder's family, but model.arch is not bert"));
  CHECK_THAT(
      config_error({"model.arch=llama", "model.shared_expert_d_ff=16"}),
      Contains("`model.shared_expert_d_ff` sizes the shared expert of a mixture of experts, but the model has no "
               "experts"));
  CHECK(config_error({"model.arch=llama", "model.n_experts=4", "model.shared_expert_d_ff=16"}) == "no error");
  CHECK(config_error({"model.arch=llama", "model.n_experts=4", "model.router_aux_loss_coef=0.01",
                      "model.activation_checkpointing=true"}) == "no error");
  // longrope: one factor per rotated pair (d_model 768 / 12 heads: 32 pairs).
  CHECK_THAT(config_error({"model.arch=llama", "model.rope_scaling.type=longrope",
                           "model.rope_scaling.short_factor=[1, 2]", "model.rope_scaling.original_max_seq_len=512"}),
             Contains("model.rope_scaling.short_factor") && Contains("32, not 2"));
  CHECK_THAT(config_error({"model.arch=llama", "model.head_dim=7"}),
             Contains("would rotate 7 dimensions of each head (head size 7,"));
  CHECK(config_error({"model.arch=llama", "model.head_dim=10", "model.partial_rotary_factor=0.4"}) == "no error");
  CHECK_THAT(config_error({"model.arch=llama", "model.head_dim=10", "model.partial_rotary_factor=0.3"}),
             Contains("model.partial_rotary_factor") && Contains("would rotate 3 dimensions"));
  // Fields of other types do not make two specs differ.
  const auto a =
      model::ModelSpec::from_config(test::resolve(test::kMinimal, {"model.arch=llama", "model.rope_scaling.type=linear",
                                                                   "model.rope_scaling.factor=2"})
                                        .values.model);
  const auto b = model::ModelSpec::from_config(
      test::resolve(test::kMinimal, {"model.arch=llama", "model.rope_scaling.type=linear",
                                     "model.rope_scaling.factor=2", "model.rope_scaling.beta_fast=3"})
          .values.model);
  CHECK(a.same_shape(b));
}

TEST_CASE("model.json of version 1 reads with the family defaults", "[model]") {
  const std::string v1 = R"({"format": "hftrain-model", "version": 1, "arch": "llama", "n_layer": 2, "n_head": 4,
      "n_kv_head": 2, "d_model": 32, "d_ff": 64, "max_seq_len": 16, "vocab_size": 50, "rope_theta": 10000.0,
      "norm_eps": 1e-6, "dropout": 0.0, "tie_embeddings": false, "init_std": 0.02})";
  const auto s = model::ModelSpec::from_json(v1, "model.json");
  CHECK(s.attention_biases() == AttentionBias::kNone);
  CHECK_FALSE(s.mlp_biases());
  CHECK(s.rope_scaling.type == RopeType::kDefault);
  CHECK(s.head_dim() == 8);
  CHECK(s.qk_norm == config::QkNorm::kNone);
  std::string v5 = s.to_json();
  v5.replace(v5.find("\"version\": 4"), 12, "\"version\": 5");
  CHECK_THROWS_WITH(model::ModelSpec::from_json(v5, "model.json"), Contains("newer than this hftrain reads"));
  std::string window_only = s.to_json();
  window_only.replace(window_only.find("\"sliding_window_pattern\": 0"), 27, "\"sliding_window_pattern\": 2");
  CHECK_THROWS_WITH(model::ModelSpec::from_json(window_only, "model.json"), Contains("without a sliding_window"));
  std::string bogus = s.to_json();
  bogus.replace(bogus.find("\"qk_norm\": \"none\""), 17, "\"qk_norm\": \"odd\"");
  CHECK_THROWS_WITH(model::ModelSpec::from_json(bogus, "model.json"), Contains("model.json: unknown qk_norm 'odd'"));
}

TEST_CASE("RoPE inverse frequencies of each scaling type", "[model][rope]") {
  auto spec = read(family("LlamaForCausalLM", R"(, "hidden_size": 64, "rope_theta": 10000.0)"));  // head_dim 16
  const auto base = model::rope_inv_freq(spec);
  REQUIRE(base.size(0) == 8);
  for (int64_t i = 0; i < 8; ++i) {
    CHECK(base[i].item<double>() == Approx(std::pow(10000.0, -2.0 * static_cast<double>(i) / 16.0)).epsilon(1e-6));
  }
  auto scaled = spec;
  scaled.rope_scaling.type = RopeType::kLinear;
  scaled.rope_scaling.factor = 4;
  CHECK(torch::allclose(model::rope_inv_freq(scaled), base / 4));
  scaled.rope_scaling.type = RopeType::kDynamic;  // unchanged up to max_seq_len
  CHECK(torch::equal(model::rope_inv_freq(scaled), base));
  // llama3: wavelengths 2 pi / f; short ones kept, long ones divided, the band between blended.
  scaled.rope_scaling = model::RopeScaling{};
  scaled.rope_scaling.type = RopeType::kLlama3;
  scaled.rope_scaling.factor = 8, scaled.rope_scaling.original_max_seq_len = 16;
  scaled.rope_scaling.low_freq_factor = 1, scaled.rope_scaling.high_freq_factor = 4;
  const auto l3 = model::rope_inv_freq(scaled);
  for (int64_t i = 0; i < 8; ++i) {
    const double wavelen = 2 * std::numbers::pi / base[i].item<double>();
    INFO("dimension " << i << ", wavelength " << wavelen);
    if (wavelen < 4) CHECK(l3[i].item<double>() == Approx(base[i].item<double>()));
    if (wavelen > 16) CHECK(l3[i].item<double>() == Approx(base[i].item<double>() / 8));
    if (wavelen >= 4 && wavelen <= 16) {
      CHECK(l3[i].item<double>() < base[i].item<double>());
      CHECK(l3[i].item<double>() > base[i].item<double>() / 8);
    }
  }
  // yarn: cos and sin carry the attention factor.
  scaled.rope_scaling = {};
  scaled.rope_scaling.type = RopeType::kYarn;
  scaled.rope_scaling.factor = 4;
  scaled.rope_scaling.original_max_seq_len = 16;
  scaled.rope_scaling.attention_factor = 1.5;
  const auto tables = model::rope_tables(scaled);
  CHECK(tables.cos.sizes().vec() == std::vector<int64_t>{64, 16});
  CHECK(tables.cos[0][0].item<float>() == 1.5f);
  const auto f = model::rope_inv_freq(scaled);
  CHECK(f[0].item<float>() == base[0].item<float>());           // the fastest dimension is extrapolated
  CHECK(f[7].item<double>() == Approx(base[7].item<double>() / 4));  // the slowest interpolated
  // longrope: each pair's frequency divided by its factor (short set, long set), both tables scaled.
  scaled.rope_scaling = {};
  scaled.rope_scaling.type = RopeType::kLongrope;
  scaled.rope_scaling.original_max_seq_len = 16;
  scaled.rope_scaling.attention_factor = 1.25;
  scaled.rope_scaling.short_factor = {1, 1, 2, 2, 3, 3, 4, 4};
  scaled.rope_scaling.long_factor = {1, 2, 4, 8, 16, 32, 64, 128};
  const auto short_freq = model::rope_inv_freq(scaled);
  const auto long_freq = model::rope_inv_freq(scaled, /*long_factors=*/true);
  for (int64_t i = 0; i < 8; ++i) {
    CHECK(short_freq[i].item<double>() == Approx(base[i].item<double>() / scaled.rope_scaling.short_factor[i]));
    CHECK(long_freq[i].item<double>() == Approx(base[i].item<double>() / scaled.rope_scaling.long_factor[i]));
  }
  const auto both = model::rope_tables(scaled);
  CHECK(both.long_cos.sizes().vec() == std::vector<int64_t>{64, 16});
  CHECK((both.cos[0][0].item<float>() == 1.25f && both.long_cos[0][0].item<float>() == 1.25f));
  CHECK_FALSE(tables.long_cos.defined());  // other types have one set
}

TEST_CASE("a Mistral directory without sliding windows exports as Mistral, not Llama", "[model][hf]") {
  // Mistral 7B v0.2 and later: sliding_window null, the block a Llama block without biases.
  const auto mistral = read(family("MistralForCausalLM", R"(, "sliding_window": null)"));
  CHECK(mistral.sliding_window == 0);
  CHECK(mistral.hf_family == config::HfFamily::kMistral);
  CHECK_THAT(model::hf_config_json(mistral, {}), Contains("\"MistralForCausalLM\"") && Contains("\"mistral\""));
  // Through a run's config (model.from's shape as overrides) the name survives too.
  CHECK_THAT(model::shape_overrides(mistral), Contains("model.hf_family=mistral"));
  const auto from_config = model::ModelSpec::from_config(
      test::resolve(test::kMinimal, {"model.arch=llama", "model.hf_family=mistral"}).values.model);
  CHECK_THAT(model::hf_config_json(from_config, {}), Contains("\"MistralForCausalLM\""));
  CHECK(from_config.same_shape(
      model::ModelSpec::from_config(test::resolve(test::kMinimal, {"model.arch=llama"}).values.model)));
  // A Llama stays a Llama, and a Mistral name on a block with biases is not Mistral's.
  const auto llama = read(family("LlamaForCausalLM"));
  CHECK(llama.hf_family == config::HfFamily::kAuto);
  CHECK_THAT(model::hf_config_json(llama, {}), Contains("\"LlamaForCausalLM\""));
  CHECK_THAT(
      model::hf_config_json(
          model::ModelSpec::from_config(
              test::resolve(test::kMinimal, {"model.arch=llama", "model.hf_family=mistral", "model.attention_bias=all"})
                  .values.model),
          {}),
      Contains("\"LlamaForCausalLM\""));
  CHECK_THAT(config_error({"model.arch=gpt2", "model.hf_family=mistral"}), Contains("model.hf_family"));
}
