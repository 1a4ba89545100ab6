// hftrain's transformer against the real transformers library: tiny random GPT-2, Llama (GQA,
// untied head, RoPE), Qwen2 (q/k/v biases, tied) and Llama with llama3 RoPE scaling and biases,
// made by tests/conformance/gen_model_fixtures.py, same logits and loss. (The full set of families,
// with gradients: tests/conformance/hf_decoders.py.)
#include "../torch_catch.h"  // first: see the file

#include <functional>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model/hf/hf_config.h"
#include "model/hf/hf_weights.h"
#include "model/decoder/moe.h"
#include "model/decoder/transformer.h"
#include "util/error.h"
#include "util/fs.h"

using namespace hftrain;
namespace F = torch::nn::functional;
using Json = nlohmann::json;

namespace {

std::string fixture(const std::string& rel) { return std::string(HFTRAIN_TEST_FIXTURES_DIR) + "/" + rel; }

model::ModelSpec tiny_gpt2() {
  model::ModelSpec s;
  s.arch = config::ModelArch::kGpt2;
  s.n_layer = 2, s.n_head = 4, s.n_kv_head = 4, s.d_model = 24, s.d_ff = 96, s.max_seq_len = 32, s.vocab_size = 67;
  s.norm_eps = 1e-5, s.tie_embeddings = true;
  return s;
}

model::ModelSpec tiny_llama() {
  model::ModelSpec s;
  s.arch = config::ModelArch::kLlama;
  s.n_layer = 2, s.n_head = 4, s.n_kv_head = 2, s.d_model = 32, s.d_ff = 56, s.max_seq_len = 64, s.vocab_size = 71;
  s.rope_theta = 500000.0, s.norm_eps = 1e-5, s.tie_embeddings = false;
  return s;
}

// Gemma 3's block at its smallest: (1 + w) sandwich norms, GeGLU, scaled embeddings, per-head q/k
// norms, attention and final soft-capping, a sliding window of 3 on layers 1 and 3 (every 2nd
// layer global) with their own RoPE base, a query scalar of its own.
model::ModelSpec tiny_gemma() {
  model::ModelSpec s = tiny_llama();
  s.n_layer = 3;
  s.norm_placement = config::NormPlacement::kSandwich;
  s.norm_unit_offset = true;
  s.scale_embeddings = true;
  s.activation = config::Activation::kGeluTanh;
  s.qk_norm = config::QkNorm::kHead;
  s.query_pre_attn_scalar = 12;
  s.attn_logit_softcapping = 2.0;
  s.final_logit_softcapping = 3.0;
  s.sliding_window = 3;
  s.sliding_window_pattern = 2;
  s.rope_local_theta = 100;
  return s;
}

// The fixture's own config.json read by hftrain.
model::ModelSpec fixture_spec(const std::string& dir) {
  return model::spec_from_hf_config(util::read_file<util::CheckpointError>(fixture(dir + "/config.json"), "config"),
                                    dir + "/config.json");
}

void check_against_reference(const model::ModelSpec& spec, const std::string& dir) {
  torch::manual_seed(0);
  model::Transformer m(spec);
  model::load_hf_weights(m, model::StoredWeights(fixture(dir)));
  m->eval();
  std::ifstream in(fixture(dir + "/reference.json"));
  const Json ref = Json::parse(in);
  auto ids_vec = ref["input_ids"].get<std::vector<std::vector<int64_t>>>();
  auto ids =
      torch::empty({static_cast<int64_t>(ids_vec.size()), static_cast<int64_t>(ids_vec[0].size())}, torch::kInt64);
  for (size_t b = 0; b < ids_vec.size(); ++b)
    for (size_t t = 0; t < ids_vec[b].size(); ++t) ids[b][t] = ids_vec[b][t];
  torch::NoGradGuard no_grad;
  auto logits = m->forward(ids);
  std::vector<float> flat;
  for (const auto& b : ref["logits"])
    for (const auto& row : b)
      for (const auto& x : row) flat.push_back(x.get<float>());
  auto want = torch::from_blob(flat.data(), logits.sizes(), torch::kFloat32).clone();
  INFO("max abs logit difference " << (logits - want).abs().max().item<float>());
  CHECK(torch::allclose(logits, want, /*rtol=*/0, /*atol=*/1e-5));
  // The loss as transformers computes it: mean cross-entropy of each position's next token.
  const int64_t T = ids.size(1);
  auto loss = torch::nn::functional::cross_entropy(logits.narrow(1, 0, T - 1).reshape({-1, spec.vocab_size}),
                                                   ids.narrow(1, 1, T - 1).reshape({-1}));
  CHECK(loss.item<double>() == Approx(ref["loss"].get<double>()).epsilon(1e-6));
}

}  // namespace

TEST_CASE("GPT-2 logits and loss equal transformers'", "[model][conformance]") {
  check_against_reference(tiny_gpt2(), "tiny-gpt2");
}

TEST_CASE("Llama (GQA, RoPE, untied) logits and loss equal transformers'", "[model][conformance]") {
  check_against_reference(tiny_llama(), "tiny-llama");
}

TEST_CASE("config.json read by hftrain gives the same logits", "[model][conformance]") {
  CHECK(fixture_spec("tiny-gpt2").same_shape(tiny_gpt2()));
  CHECK(fixture_spec("tiny-llama").same_shape(tiny_llama()));
  check_against_reference(fixture_spec("tiny-llama"), "tiny-llama");
}

TEST_CASE("Qwen2 (q/k/v biases, tied head) logits and loss equal transformers'", "[model][conformance]") {
  const auto spec = fixture_spec("tiny-qwen2");
  CHECK(spec.attention_biases() == config::AttentionBias::kQkv);
  CHECK_FALSE(spec.mlp_biases());
  CHECK(spec.tie_embeddings);
  check_against_reference(spec, "tiny-qwen2");
}

TEST_CASE("Llama with llama3 RoPE scaling and biases equals transformers'", "[model][conformance]") {
  const auto spec = fixture_spec("tiny-llama-scaled");
  CHECK(spec.rope_scaling.type == config::RopeType::kLlama3);
  CHECK(spec.attention_biases() == config::AttentionBias::kAll);
  CHECK(spec.mlp_biases());
  check_against_reference(spec, "tiny-llama-scaled");
}

TEST_CASE("decoding with the KV cache equals a full forward", "[model]") {
  // Sliding windows shorter than the prefill, through SDPA (no soft-capping) and written out.
  auto sliding = tiny_llama();
  sliding.sliding_window = 3;
  for (const auto& spec : {tiny_gpt2(), tiny_llama(), sliding, tiny_gemma()}) {
    torch::manual_seed(3);
    model::Transformer m(spec);
    m->eval();
    torch::NoGradGuard no_grad;
    auto ids = torch::randint(0, spec.vocab_size, {2, 9}, torch::kInt64);
    auto full = m->forward(ids);  // (2, 9, V)
    auto cache = m->make_cache(2, 16);
    auto prefill = m->forward(ids.narrow(1, 0, 4), &cache);
    CHECK(torch::allclose(prefill, full.narrow(1, 0, 4), 0, 1e-5));
    for (int64_t t = 4; t < 9; ++t) {
      auto step = m->forward(ids.narrow(1, t, 1), &cache);
      INFO("position " << t);
      CHECK(torch::allclose(step, full.narrow(1, t, 1), 0, 1e-5));
    }
    CHECK(cache.length == 9);
  }
}

// What each Gemma option changes, one at a time against the model without it: every option takes
// effect (a test of the options above that passed with one ignored would prove nothing), and a
// window that covers the sequence changes nothing.
TEST_CASE("each of Gemma's options changes the logits, a window as long as the input does not", "[model]") {
  torch::NoGradGuard no_grad;
  auto ids = torch::randint(0, 71, {2, 10}, torch::kInt64);
  const auto logits = [&](const model::ModelSpec& spec) {
    model::Transformer m(spec);
    torch::manual_seed(5);  // the same values in every variant (norm weights too, whatever their start)
    for (auto& p : m->parameters()) p.copy_(torch::randn(p.sizes()) * 0.5);
    m->eval();
    return m->forward(ids);
  };
  const auto base = tiny_gemma();
  const auto reference = logits(base);
  const std::vector<std::pair<std::string, std::function<void(model::ModelSpec&)>>> options = {
      {"norm_unit_offset", [](auto& s) { s.norm_unit_offset = false; }},
      {"scale_embeddings", [](auto& s) { s.scale_embeddings = false; }},
      {"activation", [](auto& s) { s.activation = config::Activation::kSilu; }},
      {"query_pre_attn_scalar", [](auto& s) { s.query_pre_attn_scalar = 0; }},
      {"attn_logit_softcapping", [](auto& s) { s.attn_logit_softcapping = 0; }},
      {"final_logit_softcapping", [](auto& s) { s.final_logit_softcapping = 0; }},
      {"sliding_window", [](auto& s) { s.sliding_window = 0, s.sliding_window_pattern = 0, s.rope_local_theta = 0; }},
      {"sliding_window_pattern", [](auto& s) { s.sliding_window_pattern = 0; }},
      {"rope_local_theta", [](auto& s) { s.rope_local_theta = 0; }},
  };
  for (const auto& [name, unset] : options) {
    auto spec = base;
    unset(spec);
    INFO(name);
    CHECK((logits(spec) - reference).abs().max().item<double>() > 1e-3);
  }
  auto wide = base;  // a window as long as the input: every layer sees every earlier position
  wide.sliding_window = 10;
  wide.rope_local_theta = 0;
  auto none = wide;
  none.sliding_window = 0, none.sliding_window_pattern = 0;
  CHECK(torch::allclose(logits(wide), logits(none), 0, 1e-6));
}

// longrope switches from its short factors to its long ones for the whole forward once the last
// position is past original_max_seq_len: the first positions' logits then change, and decoding
// follows the same rule step by step (as transformers' longrope_frequency_update).
TEST_CASE("longrope uses the long factors once the sequence is past the original context", "[model]") {
  auto spec = tiny_llama();  // head_dim 8: 4 pairs
  spec.rope_scaling.type = config::RopeType::kLongrope;
  spec.rope_scaling.original_max_seq_len = 6;
  spec.rope_scaling.attention_factor = 1.1;
  spec.rope_scaling.short_factor = {1.0, 1.2, 1.5, 2.0};
  spec.rope_scaling.long_factor = {1.0, 4.0, 16.0, 64.0};
  torch::manual_seed(3);
  model::Transformer m(spec);
  m->eval();
  torch::NoGradGuard no_grad;
  for (auto& p : m->parameters()) p.copy_(torch::randn(p.sizes()) * 0.5);  // scores the rotation moves
  auto ids = torch::randint(0, spec.vocab_size, {2, 9}, torch::kInt64);
  const auto short_run = m->forward(ids.narrow(1, 0, 6));  // 6 positions: short factors
  const auto long_run = m->forward(ids);                   // 9: long factors for all of them
  CHECK((short_run - long_run.narrow(1, 0, 6)).abs().max().item<double>() > 1e-4);
  // Position 0 is not rotated at all: the factors cannot change its logits.
  CHECK(torch::allclose(short_run.narrow(1, 0, 1), long_run.narrow(1, 0, 1), 0, 1e-6));
  // Packed rows decide by their largest position, as a plain forward of that length.
  const auto packed = m->forward(ids, nullptr, torch::arange(9, torch::kInt64).repeat({2, 1}));
  CHECK(torch::allclose(packed, long_run, 0, 1e-5));
  // Decoding: the prefill of 6 positions rotates with the short factors, each later step with the long ones.
  auto cache = m->make_cache(2, 16);
  CHECK(torch::allclose(m->forward(ids.narrow(1, 0, 6), &cache), short_run, 0, 1e-5));
  const auto step = m->forward(ids.narrow(1, 6, 1), &cache);
  CHECK(torch::isfinite(step).all().item<bool>());
}

// The router as transformers' TopKRouter: top-k of the fp32 softmax, renormalised or not; each
// token's output is the weighted sum of its experts' gated MLPs, whatever order the grouping takes.
TEST_CASE("mixture of experts: routing and grouped experts equal the per-token sum", "[model]") {
  auto spec = tiny_llama();
  spec.n_experts = 5, spec.experts_per_token = 2, spec.expert_d_ff = 12;
  for (const bool renormalize : {true, false}) {
    spec.moe_renormalize = renormalize;
    torch::manual_seed(7);
    model::Moe moe(spec);
    torch::NoGradGuard no_grad;
    for (auto& p : moe->parameters()) p.copy_(torch::randn(p.sizes()) * 0.3);
    const auto x = torch::randn({2, 7, 32});
    const auto flat = x.reshape({-1, 32});
    const model::Routing r = moe->route(flat);
    const auto probs = torch::softmax(F::linear(flat, moe->router), -1);
    auto [top, experts] = probs.topk(2, -1);
    if (renormalize) top = top / top.sum(-1, true);
    CHECK(r.experts.equal(experts));
    CHECK(torch::allclose(r.weights, top));
    const auto gate_up = moe->experts_gate_up.view({5, 24, 32});
    const auto down = moe->experts_down.view({5, 32, 12});
    auto expected = torch::zeros_like(flat);
    for (int64_t n = 0; n < flat.size(0); ++n) {
      for (int64_t k = 0; k < 2; ++k) {
        const int64_t e = experts[n][k].item<int64_t>();
        const auto h = F::linear(flat[n], gate_up[e]).chunk(2, -1);
        expected[n] += top[n][k] * F::linear(F::silu(h[0]) * h[1], down[e]);
      }
    }
    INFO("renormalize " << renormalize);
    CHECK(torch::allclose(moe->forward(x).reshape({-1, 32}), expected, 1e-5, 1e-6));
  }
}

// Qwen2-MoE's shared expert: every token also passes one gated MLP of its own size, scaled by
// sigmoid(shared_gate . x), added to the routed experts' sum.
TEST_CASE("mixture of experts: a shared expert adds its sigmoid-gated MLP to every token", "[model]") {
  auto spec = tiny_llama();
  spec.n_experts = 4, spec.experts_per_token = 2, spec.expert_d_ff = 12, spec.shared_expert_d_ff = 20;
  torch::manual_seed(3);
  model::Moe moe(spec);
  REQUIRE(moe->shared);
  CHECK(moe->shared->gate_up_proj->weight.sizes() == torch::IntArrayRef{40, 32});
  CHECK(moe->shared->down_proj->weight.sizes() == torch::IntArrayRef{32, 20});
  CHECK(moe->shared_gate->weight.sizes() == torch::IntArrayRef{1, 32});
  torch::NoGradGuard no_grad;
  for (auto& p : moe->parameters()) p.copy_(torch::randn(p.sizes()) * 0.3);
  const auto x = torch::randn({2, 5, 32});
  const auto flat = x.reshape({-1, 32});
  // The routed part alone: the same router and experts without the shared expert.
  auto routed_spec = spec;
  routed_spec.shared_expert_d_ff = 0;
  model::Moe routed(routed_spec);
  routed->router.copy_(moe->router);
  routed->experts_gate_up.copy_(moe->experts_gate_up);
  routed->experts_down.copy_(moe->experts_down);
  const auto h = F::linear(flat, moe->shared->gate_up_proj->weight).chunk(2, -1);
  const auto shared = F::linear(F::silu(h[0]) * h[1], moe->shared->down_proj->weight);
  const auto gate = torch::sigmoid(F::linear(flat, moe->shared_gate->weight));  // (N, 1)
  const auto expected = routed->forward(x).reshape({-1, 32}) + gate * shared;
  CHECK(torch::allclose(moe->forward(x).reshape({-1, 32}), expected, 1e-5, 1e-6));
  CHECK(spec.layer_parameter_count(0) == routed_spec.layer_parameter_count(0) + 3 * 32 * 20 + 32);
}

// A tiny Llama whose `layers` layers are all mixtures of 4 experts (2 per token) with the
// load-balancing loss on, its weights random (N(0, 0.3)) from `seed`.
static model::Transformer moe_with_aux_loss(int64_t layers, uint64_t seed) {
  auto spec = tiny_llama();
  spec.n_layer = layers;
  spec.n_experts = 4, spec.experts_per_token = 2, spec.expert_d_ff = 16, spec.moe_every = 1;
  spec.router_aux_loss_coef = 0.01;
  torch::manual_seed(seed);
  model::Transformer m(spec);
  torch::NoGradGuard no_grad;
  for (auto& p : m->parameters()) p.copy_(torch::randn(p.sizes()) * 0.3);
  return m;
}

// transformers' load_balancing_loss_func over every MoE layer of a forward: E x sum_e f_e P_e with
// f the share of top-k slots and P the mean router probability, both over all layers' tokens; its
// gradient reaches every router; generation (no gradients) collects nothing.
TEST_CASE("mixture of experts: the load-balancing loss over the layers", "[model]") {
  model::Transformer m = moe_with_aux_loss(3, 11);
  const auto& spec = m->spec();
  const auto ids = torch::randint(0, spec.vocab_size, {2, 6}, torch::kInt64);
  // The MoE layers in order, recording what their routers choose.
  std::vector<model::MoeImpl*> moes;
  for (const auto& item : m->named_modules()) {
    if (auto* moe = item.value()->as<model::MoeImpl>()) moes.push_back(moe);
  }
  REQUIRE(moes.size() == 3);
  for (auto* moe : moes) moe->record_routing(true);
  m->forward(ids);
  const auto aux = m->take_router_aux_loss();
  REQUIRE(aux.defined());
  CHECK_FALSE(m->take_router_aux_loss().defined());  // taken once
  // Closed form from the per-layer routing: counts of the chosen experts over all slots.
  torch::Tensor counts = torch::zeros({4});
  for (int64_t i = 0; i < 3; ++i) {
    const auto chosen = moes[static_cast<size_t>(i)]->last_experts().reshape({-1});
    counts += torch::bincount(chosen, {}, 4).to(torch::kFloat32);
  }
  const double rows = 3.0 * 12;
  // aux = 4 sum_e (counts_e / rows) P_e with P a probability vector: between the smallest and the
  // largest share times 4 (each layer's counts are the recorded choices).
  CHECK(aux.item<double>() >= 4.0 * (counts / rows).min().item<double>() - 1e-6);
  CHECK(aux.item<double>() <= 4.0 * (counts / rows).max().item<double>() + 1e-6);
  // The formula on statistics given by hand: two layers of 3 and 1 tokens, 2 experts.
  const std::vector<model::RouterStats> hand = {
      {torch::tensor({2.0f, 1.0f}), torch::tensor({2.0f, 1.0f}), torch::scalar_tensor(3.0)},
      {torch::tensor({0.0f, 1.0f}), torch::tensor({0.25f, 0.75f}), torch::scalar_tensor(1.0)}};
  // counts (2, 2) / 4 = (0.5, 0.5); probabilities (2.25, 1.75) / 4; 2 x (0.5 x 0.5625 + 0.5 x 0.4375) = 1.
  CHECK(model::load_balancing_loss(hand, 2).item<double>() == Approx(1.0));
  aux.backward();
  for (int64_t i = 0; i < 3; ++i) {
    INFO("layer " << i);
    const auto g = moes[static_cast<size_t>(i)]->router.grad();
    REQUIRE(g.defined());
    CHECK(g.abs().sum().item<double>() > 0);
  }
  {
    torch::NoGradGuard no_grad;  // generation: no statistics
    m->forward(ids);
  }
  CHECK_FALSE(m->take_router_aux_loss().defined());
}

// A padded batch (the attention mask set, as transformers passes it): the padding is no token of the
// loss. Right padding leaves the tokens' states as they are (causal attention), so the masked loss
// equals that of the rows without their padding; with checkpointing too; an all-ones mask changes
// nothing.
TEST_CASE("mixture of experts: the load-balancing loss leaves the padding out", "[model]") {
  model::Transformer m = moe_with_aux_loss(2, 12);
  const auto& spec = m->spec();
  const auto ids = torch::randint(0, spec.vocab_size, {1, 9}, torch::kInt64);
  const auto aux_of = [&](const torch::Tensor& input, const torch::Tensor& mask) {
    m->set_router_token_mask(mask);
    m->forward(input);
    return m->take_router_aux_loss().item<double>();
  };
  const double unpadded = aux_of(ids.narrow(1, 0, 6), {});
  auto padded = ids.clone();
  padded.narrow(1, 6, 3).fill_(0);
  const auto mask = torch::tensor({{1, 1, 1, 1, 1, 1, 0, 0, 0}}, torch::kInt64);
  CHECK(aux_of(padded, mask) == Approx(unpadded).epsilon(1e-5));
  CHECK(aux_of(padded, {}) != Approx(unpadded).epsilon(1e-3));  // counting the padding differs
  CHECK(aux_of(ids, torch::ones_like(ids)) == Approx(aux_of(ids, {})).epsilon(1e-6));
  m->train();
  m->set_activation_checkpointing(true);
  CHECK(aux_of(padded, mask) == Approx(unpadded).epsilon(1e-5));
}

TEST_CASE("weights that do not fit are listed in one error", "[model]") {
  using Catch::Matchers::Contains;
  auto load_error = [](model::ModelSpec spec, const std::string& dir) {
    model::Transformer m(spec);
    const auto before = m->parameters_by_name().front().second.clone();
    try {
      model::load_hf_weights(m, model::StoredWeights(fixture(dir)));
    } catch (const util::CheckpointError& e) {
      CHECK(torch::equal(before, m->parameters_by_name().front().second));  // nothing changed
      return std::string(e.what());
    }
    FAIL("expected a CheckpointError");
    return std::string();
  };
  // Another family altogether: every name differs.
  CHECK_THAT(
      load_error(tiny_llama(), "tiny-gpt2"),
      Contains("tiny-gpt2/model.safetensors does not match the llama model its config describes") &&
          Contains("missing embed_tokens.weight") &&
          Contains("unexpected transformer.h.*.attn.c_attn.bias (in 2 layers)"));
  // Qwen2's q/k/v biases read as a Llama without biases: the extra tensors, folded over layers.
  auto spec = fixture_spec("tiny-qwen2");
  spec.attention_bias = config::AttentionBias::kNone;
  CHECK_THAT(
      load_error(spec, "tiny-qwen2"),
      Contains("unexpected model.layers.*.self_attn.k_proj.bias (in 2 layers), model.layers.*.self_attn.q_proj.bias "
               "(in 2 layers), model.layers.*.self_attn.v_proj.bias (in 2 layers)"));
  // An untied head the checkpoint lacks, and biases it lacks.
  spec = fixture_spec("tiny-qwen2");
  spec.tie_embeddings = false;
  spec.attention_bias = config::AttentionBias::kAll;
  CHECK_THAT(load_error(spec, "tiny-qwen2"),
             Contains("missing layers.*.self_attn.o_proj.bias (in 2 layers), lm_head.weight"));
  // A shape that differs.
  spec = fixture_spec("tiny-qwen2");
  spec.d_ff = 48;
  CHECK_THAT(load_error(spec, "tiny-qwen2"),
             Contains("wrong shape or type model.layers.0.mlp.gate_proj.weight (Float [40, 32], "
                      "expected [48, 32] floating point)") &&
                 Contains("model.layers.0.mlp.down_proj.weight (Float [32, 40], expected [32, 48] "
                          "floating point)"));
}

TEST_CASE("initialisation follows the family's scheme", "[model]") {
  auto spec = tiny_gpt2();
  spec.n_layer = 8, spec.d_model = 256, spec.n_head = 8, spec.d_ff = 1024, spec.vocab_size = 512;
  torch::manual_seed(0);
  model::Transformer m(spec);
  for (const auto& [name, p] : m->parameters_by_name()) {
    INFO(name);
    if (name.ends_with(".bias")) CHECK(p.abs().max().item<float>() == 0.0f);
    if (name.find("norm.weight") != std::string::npos) CHECK(p.eq(1).all().item<bool>());
    if (name == "layers.0.attn.qkv_proj.weight") CHECK(p.std().item<double>() == Approx(0.02).epsilon(0.02));
    if (name == "layers.0.mlp.down_proj.weight") CHECK(p.std().item<double>() == Approx(0.02 / 4.0).epsilon(0.02));
  }
  CHECK(m->non_embedding_parameters() > 0);
}

TEST_CASE("activation checkpointing gives the same loss and gradients", "[model]") {
  for (auto spec : {tiny_gpt2(), tiny_llama()}) {
    spec.dropout = 0.1;  // dropout must replay identically in the recomputation
    auto ids = torch::randint(0, spec.vocab_size, {2, 12}, torch::kInt64);
    std::vector<std::vector<torch::Tensor>> grads(2);
    std::vector<double> losses(2);
    for (int on = 0; on < 2; ++on) {
      torch::manual_seed(5);
      model::Transformer m(spec);
      m->train();
      m->set_activation_checkpointing(on == 1);
      torch::manual_seed(9);
      auto logits = m->forward(ids);
      auto loss = torch::nn::functional::cross_entropy(logits.reshape({-1, spec.vocab_size}), ids.reshape({-1}));
      loss.backward();
      losses[on] = loss.item<double>();
      for (auto& [name, p] : m->parameters_by_name()) grads[on].push_back(p.grad().clone());
    }
    CHECK(losses[0] == Approx(losses[1]).epsilon(1e-7));
    REQUIRE(grads[0].size() == grads[1].size());
    for (size_t i = 0; i < grads[0].size(); ++i) {
      INFO("parameter " << i);
      CHECK(torch::allclose(grads[0][i], grads[1][i], 1e-5, 1e-7));
    }
  }
}

TEST_CASE("parameter_count equals the parameters the model builds", "[model]") {
  auto count = [](const model::ModelSpec& s) {
    int64_t n = 0;
    for (const auto& p : model::Transformer(s)->parameters()) n += p.numel();
    return n;
  };
  std::vector<model::ModelSpec> specs = {tiny_gpt2(), tiny_llama()};
  auto untied = tiny_gpt2();
  untied.tie_embeddings = false;
  auto biased = tiny_llama();
  biased.attention_bias = config::AttentionBias::kQkv;
  biased.mlp_bias = true;
  auto all_biases = tiny_llama();
  all_biases.attention_bias = config::AttentionBias::kAll;
  auto qwen3 = tiny_llama();  // per-head q/k norms, heads wider than d_model / n_head
  qwen3.qk_norm = config::QkNorm::kHead;
  qwen3.explicit_head_dim = qwen3.head_dim() * 2;
  auto olmo2 = tiny_llama();  // post-norms, q/k norms over the projections
  olmo2.qk_norm = config::QkNorm::kProjection;
  olmo2.norm_placement = config::NormPlacement::kPost;
  auto sandwich = tiny_llama();
  sandwich.norm_placement = config::NormPlacement::kSandwich;
  auto partial = tiny_llama();
  partial.partial_rotary_factor = 0.5;
  partial.fused_projections = true;
  auto moe = tiny_llama();  // every layer a mixture of 4 experts of 24
  moe.n_experts = 4, moe.experts_per_token = 2, moe.expert_d_ff = 24;
  auto sparse_step = moe;  // every second layer MoE, the others dense MLPs of d_ff
  sparse_step.n_layer = 3, sparse_step.moe_every = 2;
  specs.insert(specs.end(),
               {untied, biased, all_biases, qwen3, olmo2, sandwich, partial, tiny_gemma(), moe, sparse_step});
  for (const auto& s : specs) CHECK(s.parameter_count() == count(s));
  // A token passes through experts_per_token of each MoE layer's experts (3 matrices of d x F each).
  CHECK(moe.active_parameter_count() == moe.parameter_count() - 2 * (2 * 3 * 32 * 24));
  CHECK(sparse_step.active_parameter_count() == sparse_step.parameter_count() - 1 * (2 * 3 * 32 * 24));
  // The largest block is zero3's unit: the MoE one.
  CHECK(sparse_step.block_parameter_count() == sparse_step.layer_parameter_count(1));
  CHECK(sparse_step.layer_parameter_count(1) > sparse_step.layer_parameter_count(0));
}

// Under activation checkpointing the routers' statistics leave each checkpointed block as outputs:
// the same aux loss, and the same gradients everywhere (routers included) as without.
TEST_CASE("mixture of experts: the load-balancing loss under activation checkpointing", "[model]") {
  auto spec = tiny_llama();
  spec.n_layer = 3;
  spec.n_experts = 4, spec.experts_per_token = 2, spec.expert_d_ff = 16, spec.moe_every = 2;
  spec.shared_expert_d_ff = 8;
  spec.router_aux_loss_coef = 0.3;
  torch::manual_seed(12);
  model::Transformer plain(spec), checkpointed(spec);
  {
    torch::NoGradGuard no_grad;
    auto a = plain->parameters(), b = checkpointed->parameters();
    for (size_t i = 0; i < a.size(); ++i) {
      a[i].copy_(torch::randn(a[i].sizes()) * 0.3);
      b[i].copy_(a[i]);
    }
  }
  checkpointed->set_activation_checkpointing(true);
  const auto ids = torch::randint(0, spec.vocab_size, {2, 6}, torch::kInt64);
  std::vector<double> losses;
  for (auto* m : {&plain, &checkpointed}) {
    (*m)->train();
    const auto logits = (*m)->forward(ids);
    const auto aux = (*m)->take_router_aux_loss();
    REQUIRE(aux.defined());
    const auto loss = logits.square().mean() + spec.router_aux_loss_coef * aux;
    losses.push_back(aux.item<double>());
    loss.backward();
  }
  CHECK(losses[0] == Approx(losses[1]).epsilon(1e-6));
  const auto a = plain->named_parameters(), b = checkpointed->named_parameters();
  for (const auto& item : a) {
    INFO(item.key());
    const auto& ga = item.value().grad();
    const auto& gb = b[item.key()].grad();
    REQUIRE(ga.defined() == gb.defined());
    if (ga.defined()) CHECK(torch::allclose(ga, gb, 1e-5, 1e-6));
  }
  CHECK(a["layers.1.moe.router"].grad().abs().sum().item<double>() > 0);
}
