// LoRA adapters on hftrain's transformer (peft/lora.h): which Hugging Face modules a target list
// selects, that a fresh adapter leaves the model's outputs unchanged, that a trained one equals
// its merged weight, that only the adapters (and saved modules) train, and peft's files.
#include "../torch_catch.h"  // first: see the file

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <torch/torch.h>

#include "model/encoder/bert.h"
#include "model/hf/hf_modules.h"
#include "model/decoder/transformer.h"
#include "peft/lora.h"
#include "peft/peft_files.h"
#include "util/error.h"

using namespace hftrain;

namespace {

model::ModelSpec spec_of(config::ModelArch arch) {
  model::ModelSpec s;
  s.arch = arch;
  s.n_layer = 2, s.n_head = 4, s.d_model = 32, s.max_seq_len = 32, s.vocab_size = 40, s.norm_eps = 1e-5;
  s.init_std = 0.2;
  if (arch == config::ModelArch::kGpt2) {
    s.n_kv_head = 4, s.d_ff = 64, s.tie_embeddings = true;
  } else {
    s.n_kv_head = 2, s.d_ff = 48, s.rope_theta = 10000.0, s.tie_embeddings = false;
  }
  return s;
}

config::LoraConfig lora_config(int64_t r = 4) {
  config::LoraConfig c;
  c.r = r;
  c.alpha = 8;
  return c;
}

std::vector<std::string> names_of(const std::vector<model::HfLinear>& v) {
  std::vector<std::string> out;
  for (const auto& m : v) out.push_back(m.name);
  return out;
}

const torch::Tensor kIds = torch::tensor({{1, 5, 9, 2, 7, 3, 11, 4}}, torch::kInt64);

// Gives every adapter's B random values, so that the adapters change the outputs.
template <typename Model>
void randomise_b(Model& m) {
  torch::NoGradGuard no_grad;
  for (auto& [name, p] : m->parameters_by_name()) {
    if (name.ends_with(".B")) p.normal_(0.0, 0.3);
  }
}

// Adds every adapter's delta (W + scale B A) of `adapted` into the same layers of `into`.
void add_deltas(torch::nn::Module& adapted, torch::nn::Module& into) {
  torch::NoGradGuard no_grad;
  auto params = into.named_parameters();
  for (const auto& [dense, adapter] : peft::lora_adapters(adapted)) {
    auto w = params[dense + ".weight"];
    w.add_(adapter->delta_weight(w.size(0), w.size(1)));
  }
}

// A small BERT classifier's spec.
model::BertSpec tiny_bert(int64_t num_labels = 2) {
  model::BertSpec spec;
  spec.vocab_size = 50;
  spec.hidden_size = 16;
  spec.num_hidden_layers = 2;
  spec.num_attention_heads = 2;
  spec.intermediate_size = 24;
  spec.max_position_embeddings = 16;
  spec.num_labels = num_labels;
  return spec;
}

}  // namespace

TEST_CASE("lora: target modules select Hugging Face linear layers as peft does", "[peft][lora]") {
  const auto llama = model::hf_linear_modules(spec_of(config::ModelArch::kLlama));
  CHECK(llama.size() == 2 * 7 + 1);  // q k v o gate up down per layer, and the untied head
  const auto defaults = peft::select_lora_targets(llama, {}, config::ModelArch::kLlama);
  CHECK(names_of(defaults) ==
        std::vector<std::string>{"model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.v_proj",
                                 "model.layers.1.self_attn.q_proj", "model.layers.1.self_attn.v_proj"});
  const auto all = peft::select_lora_targets(llama, {"all-linear"}, config::ModelArch::kLlama);
  CHECK(all.size() == 14);  // the output layer is left out
  const auto glob = peft::select_lora_targets(llama, {"model.layers.1.mlp.*"}, config::ModelArch::kLlama);
  CHECK(names_of(glob) == std::vector<std::string>{"model.layers.1.mlp.down_proj", "model.layers.1.mlp.gate_proj",
                                                   "model.layers.1.mlp.up_proj"});
  // The q slice of the fused qkv_proj: rows 0..31; k and v follow with n_kv_head x head_dim rows.
  const auto& q = defaults[0];
  CHECK(q.dense == "layers.0.attn.qkv_proj");
  CHECK(q.row_offset == 0);
  CHECK(q.rows == 32);
  CHECK(defaults[1].row_offset == 32 + 16);
  CHECK(defaults[1].rows == 16);

  const auto gpt2 = model::hf_linear_modules(spec_of(config::ModelArch::kGpt2));
  const auto c_attn = peft::select_lora_targets(gpt2, {}, config::ModelArch::kGpt2);
  CHECK(names_of(c_attn) == std::vector<std::string>{"transformer.h.0.attn.c_attn", "transformer.h.1.attn.c_attn"});
  CHECK(c_attn[0].conv1d);
  CHECK(c_attn[0].rows == 96);

  CHECK_THROWS_AS(peft::select_lora_targets(llama, {"qproj"}, config::ModelArch::kLlama), util::ConfigError);
  CHECK_THROWS_WITH(peft::select_lora_targets(llama, {"lm_head"}, config::ModelArch::kLlama),
                    Catch::Contains("selects the output layer"));
  CHECK_THROWS_WITH(peft::select_lora_targets(llama, {"all-linear", "q_proj"}, config::ModelArch::kLlama),
                    Catch::Contains("among other entries"));
}

TEST_CASE("lora: a fresh adapter keeps the outputs, a trained one equals its merged weight", "[peft][lora]") {
  for (const auto arch : {config::ModelArch::kGpt2, config::ModelArch::kLlama}) {
    DYNAMIC_SECTION((arch == config::ModelArch::kGpt2 ? "gpt2" : "llama")) {
      const auto spec = spec_of(arch);
      torch::manual_seed(1);
      model::Transformer m(spec);
      m->eval();
      const auto base = m->forward(kIds).detach();
      const auto targets = peft::select_lora_targets(model::hf_linear_modules(spec), {"all-linear"}, arch);
      auto cfg = lora_config();
      cfg.dropout = 0.1;  // off in eval mode
      const auto lora = peft::attach_lora(*m, targets, model::hf_parameters(spec), {}, cfg);
      CHECK(torch::equal(m->forward(kIds), base));  // B starts at zero

      // Only the adapters train.
      int64_t trainable = 0, frozen = 0;
      for (const auto& [name, p] : m->parameters_by_name()) {
        const bool adapter = name.find(".lora.") != std::string::npos;
        CHECK(p.requires_grad() == adapter);
        (adapter ? trainable : frozen) += p.numel();
      }
      CHECK(trainable == lora.trainable_parameters);
      CHECK(frozen == lora.frozen_parameters);
      int64_t expected = 0;
      for (const auto& t : targets) expected += cfg.r * (t.in_features + t.rows);
      CHECK(trainable == expected);

      randomise_b(m);
      const auto adapted = m->forward(kIds).detach();
      CHECK((adapted - base).abs().max().item<double>() > 1e-2);
      // Merged: W + scale B A per slice, adapters removed.
      torch::manual_seed(1);
      model::Transformer merged(spec);
      merged->eval();
      add_deltas(*m, *merged);
      CHECK(torch::allclose(merged->forward(kIds), adapted, 1e-5, 1e-5));
    }
  }
}

TEST_CASE("lora: scale, rsLoRA and gaussian initialisation", "[peft][lora]") {
  auto c = lora_config(16);
  c.alpha = 32;
  CHECK(peft::lora_scale(c) == Approx(2.0));
  c.use_rslora = true;
  CHECK(peft::lora_scale(c) == Approx(8.0));
  const auto spec = spec_of(config::ModelArch::kLlama);
  const auto targets = peft::select_lora_targets(model::hf_linear_modules(spec), {"o_proj"}, spec.arch);
  for (const auto init : {config::LoraInit::kDefault, config::LoraInit::kGaussian}) {
    torch::manual_seed(2);
    model::Transformer m(spec);
    auto cfg = lora_config(64);
    cfg.init = init;
    peft::attach_lora(*m, targets, model::hf_parameters(spec), {}, cfg);
    const auto A = m->named_parameters()["layers.0.attn.o_proj.lora.o_proj.A"];
    REQUIRE(A.sizes() == torch::IntArrayRef({64, 32}));
    if (init == config::LoraInit::kDefault) {
      CHECK(A.abs().max().item<double>() <= 1.0 / std::sqrt(32.0));  // kaiming-uniform, a = sqrt(5)
      CHECK(A.abs().max().item<double>() > 0.9 / std::sqrt(32.0));
    } else {
      CHECK(A.std().item<double>() == Approx(1.0 / 64).epsilon(0.1));
    }
  }
}

TEST_CASE("lora: modules_to_save train in full, fused ones are refused", "[peft][lora]") {
  const auto spec = spec_of(config::ModelArch::kLlama);
  model::Transformer m(spec);
  const auto targets = peft::select_lora_targets(model::hf_linear_modules(spec), {}, spec.arch);
  const auto lora = peft::attach_lora(*m, targets, model::hf_parameters(spec), {"lm_head"}, lora_config());
  CHECK(m->named_parameters()["lm_head.weight"].requires_grad());
  CHECK_FALSE(m->named_parameters()["embed_tokens.weight"].requires_grad());
  CHECK(std::find(lora.trainable.begin(), lora.trainable.end(), "lm_head.weight") != lora.trainable.end());
  model::Transformer other(spec);
  CHECK_THROWS_WITH(peft::attach_lora(*other, targets, model::hf_parameters(spec), {"q_proj"}, lora_config()),
                    Catch::Contains("fused"));
  CHECK_THROWS_WITH(peft::attach_lora(*other, targets, model::hf_parameters(spec), {"classifier"}, lora_config()),
                    Catch::Contains("matches no module"));
}

TEST_CASE("lora: peft's adapter files round-trip into a fresh model", "[peft][lora]") {
  for (const auto arch : {config::ModelArch::kGpt2, config::ModelArch::kLlama}) {
    DYNAMIC_SECTION((arch == config::ModelArch::kGpt2 ? "gpt2" : "llama")) {
      const auto spec = spec_of(arch);
      const auto hf_params = model::hf_parameters(spec);
      const auto targets = peft::select_lora_targets(model::hf_linear_modules(spec), {"all-linear"}, arch);
      const std::vector<std::string> save = arch == config::ModelArch::kLlama ? std::vector<std::string>{"lm_head"}
                                                                              : std::vector<std::string>{};
      torch::manual_seed(3);
      model::Transformer m(spec);
      m->eval();
      const auto lora = peft::attach_lora(*m, targets, hf_params, save, lora_config());
      randomise_b(m);
      const auto want = m->forward(kIds).detach();

      const auto dir = std::filesystem::temp_directory_path() / ("hftrain-lora-" + std::to_string(::getpid()));
      std::filesystem::create_directories(dir);
      const auto tensors = peft::adapter_tensors(*m, lora, hf_params);
      CHECK(tensors.size() == 2 * targets.size() + save.size());
      const std::string first = arch == config::ModelArch::kGpt2
                                    ? "base_model.model.transformer.h.0.attn.c_attn.lora_A.weight"
                                    : "base_model.model.model.layers.0.mlp.down_proj.lora_A.weight";
      bool found = false;
      for (const auto& [name, t] : tensors) found = found || name == first;
      CHECK(found);
      peft::write_adapter_files(dir, peft::adapter_config(lora, lora_config(), arch, "CAUSAL_LM", "/base"), tensors);

      const peft::AdapterFile file = peft::read_adapter_config(dir);
      CHECK(file.lora.r == 4);
      CHECK(file.lora.alpha == 8);
      CHECK(file.base_model == "/base");
      CHECK(file.modules_to_save == save);
      torch::manual_seed(3);
      model::Transformer fresh(spec);
      fresh->eval();
      const auto again = peft::select_lora_targets(model::hf_linear_modules(spec), file.target_modules, arch);
      CHECK(names_of(again) == names_of(targets));
      torch::manual_seed(99);  // other initial adapters: the file's values must replace them
      const auto lora2 = peft::attach_lora(*fresh, again, hf_params, file.modules_to_save, file.lora);
      peft::load_adapter_weights(*fresh, lora2, hf_params, file);
      CHECK(torch::equal(fresh->forward(kIds), want));
      std::filesystem::remove_all(dir);
    }
  }
}

TEST_CASE("lora: adapter configs hftrain cannot continue are refused with the reason", "[peft][lora]") {
  const auto dir = std::filesystem::temp_directory_path() / ("hftrain-lora-bad-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto write = [&](const std::string& text) {
    std::ofstream(dir / peft::kAdapterConfigFile) << text;
  };
  write(R"({"peft_type": "LORA", "r": 8, "lora_alpha": 16, "target_modules": ["q_proj"], "use_dora": true})");
  CHECK(peft::read_adapter_config(dir).lora.use_dora);  // DoRA continues
  write(R"({"peft_type": "LORA", "r": 8, "lora_alpha": 16, "target_modules": ["q_proj"], "bias": "all"})");
  CHECK_THROWS_WITH(peft::read_adapter_config(dir), Catch::Contains("trained biases"));
  write(R"({"peft_type": "LORA", "r": 8, "lora_alpha": 16, "target_modules": ".*q_proj"})");
  CHECK_THROWS_WITH(peft::read_adapter_config(dir), Catch::Contains("regular expression"));
  write(R"({"peft_type": "IA3", "target_modules": ["q_proj"]})");
  CHECK_THROWS_WITH(peft::read_adapter_config(dir), Catch::Contains("LoRA adapters only"));
  write(R"({"peft_type": "LORA", "r": "eight", "target_modules": ["q_proj"]})");
  CHECK_THROWS_AS(peft::read_adapter_config(dir), util::CheckpointError);
  write("{not json");
  CHECK_THROWS_WITH(peft::read_adapter_config(dir), Catch::Contains("not a JSON object"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("lora: activation checkpointing gives the adapters the same gradients", "[peft][lora]") {
  const auto spec = spec_of(config::ModelArch::kLlama);
  const auto targets = peft::select_lora_targets(model::hf_linear_modules(spec), {"all-linear"}, spec.arch);
  std::vector<std::vector<torch::Tensor>> grads;
  for (const bool checkpointing : {false, true}) {
    torch::manual_seed(5);
    model::Transformer m(spec);
    peft::attach_lora(*m, targets, model::hf_parameters(spec), {}, lora_config());
    randomise_b(m);
    m->train();
    m->set_activation_checkpointing(checkpointing);
    const auto labels = kIds.roll(-1, 1);
    m->loss_sum(kIds, labels, 0.0).backward();
    std::vector<torch::Tensor> g;
    for (const auto& [name, p] : m->parameters_by_name()) {
      if (!p.requires_grad()) {
        CHECK_FALSE(p.grad().defined());  // the frozen base gets none
        continue;
      }
      REQUIRE(p.grad().defined());
      g.push_back(p.grad().clone());
    }
    grads.push_back(g);
  }
  REQUIRE(grads[0].size() == grads[1].size());
  for (size_t i = 0; i < grads[0].size(); ++i) CHECK(torch::allclose(grads[0][i], grads[1][i], 1e-5, 1e-6));
}

TEST_CASE("lora: a BERT classifier's tables name its own parameters, adapters train, the classifier in full",
          "[peft][lora][bert]") {
  const model::BertSpec spec = tiny_bert(3);
  torch::manual_seed(2);
  model::BertEncoder m(spec);
  m->eval();

  // hf_parameters: every parameter once, in the model's order, under its own (Hugging Face) name.
  std::vector<std::string> names, listed;
  for (const auto& [name, p] : m->parameters_by_name()) names.push_back(name);
  for (const auto& p : model::hf_parameters(spec)) {
    listed.push_back(p.param);
    CHECK(p.tensors == std::vector<std::string>{p.param});
  }
  CHECK(listed == names);
  // hf_linear_modules: 6 per layer, the pooler and the classifier (the output layer).
  const auto linears = model::hf_linear_modules(spec);
  REQUIRE(linears.size() == 2 * 6 + 2);
  CHECK(linears.back().name == "classifier");
  CHECK(linears.back().output_layer);
  CHECK(linears[4].name == "bert.encoder.layer.0.intermediate.dense");
  CHECK(linears[4].rows == 24);
  CHECK(linears[5].in_features == 24);
  CHECK_THROWS_WITH(peft::select_lora_targets(linears, {"classifier"}, config::ModelArch::kBert),
                    Catch::Contains("selects the output layer classifier"));

  const torch::Tensor ids = torch::tensor({{2, 7, 9, 11, 3}}, torch::kInt64);
  const auto base = m->forward(ids).detach();
  const auto targets = peft::select_lora_targets(linears, {}, config::ModelArch::kBert);  // query, value
  REQUIRE(targets.size() == 4);
  const auto lora = peft::attach_lora(*m, targets, model::hf_parameters(spec), {"classifier"}, lora_config());
  CHECK(torch::equal(m->forward(ids), base));  // B starts at zero
  for (const auto& [name, p] : m->parameters_by_name()) {
    INFO(name);
    CHECK(p.requires_grad() == (name.find(".lora.") != std::string::npos || name.rfind("classifier.", 0) == 0));
  }
  CHECK(m->named_parameters().contains("bert.encoder.layer.1.attention.self.value.lora.value.A"));
  int64_t expected = spec.hidden_size * spec.num_labels + spec.num_labels;
  for (const auto& t : targets) expected += lora_config().r * (t.in_features + t.rows);
  CHECK(lora.trainable_parameters == expected);

  // Trained adapters change the logits, and merging them gives the same logits.
  randomise_b(m);
  const auto adapted = m->forward(ids).detach();
  CHECK((adapted - base).abs().max().item<double>() > 1e-3);
  torch::manual_seed(2);
  model::BertEncoder merged(spec);
  merged->eval();
  add_deltas(*m, *merged);
  CHECK(torch::allclose(merged->forward(ids), adapted, 1e-5, 1e-5));
}

TEST_CASE("lora: a BERT classifier's layers are checkpointed under a frozen base, with the same gradients",
          "[peft][lora][bert]") {
  model::BertSpec spec = tiny_bert();
  spec.hidden_dropout_prob = spec.attention_probs_dropout_prob = 0.0;
  const auto targets =
      peft::select_lora_targets(model::hf_linear_modules(spec), {"all-linear"}, config::ModelArch::kBert);
  const torch::Tensor ids = torch::tensor({{2, 7, 9, 11, 3}, {2, 5, 6, 3, 0}}, torch::kInt64);
  const torch::Tensor mask = torch::tensor({{1, 1, 1, 1, 1}, {1, 1, 1, 1, 0}}, torch::kInt64);
  const torch::Tensor labels = torch::tensor({0, 1}, torch::kInt64);
  std::vector<std::vector<torch::Tensor>> grads;
  for (const bool checkpointing : {false, true}) {
    torch::manual_seed(5);
    model::BertEncoder m(spec);
    peft::attach_lora(*m, targets, model::hf_parameters(spec), {"classifier"}, lora_config());
    randomise_b(m);
    m->train();
    m->set_activation_checkpointing(checkpointing);
    const auto hidden = m->encode(ids, mask).last_hidden_state;
    // The layers' output comes out of the checkpoint's node, not out of a LayerNorm kept for backward.
    CHECK((hidden.grad_fn()->name().find("CheckpointFunction") != std::string::npos) == checkpointing);
    model::classification_loss(m->forward(ids, mask), labels).backward();
    std::vector<torch::Tensor> g;
    for (const auto& [name, p] : m->parameters_by_name()) {
      if (!p.requires_grad()) continue;
      REQUIRE(p.grad().defined());
      g.push_back(p.grad().clone());
    }
    grads.push_back(g);
  }
  REQUIRE(grads[0].size() == grads[1].size());
  for (size_t i = 0; i < grads[0].size(); ++i) CHECK(torch::allclose(grads[0][i], grads[1][i], 1e-5, 1e-6));
}

TEST_CASE("lora: DoRA starts at the base, rescales rows by magnitude over the row norm, merges and round-trips",
          "[peft][lora][dora]") {
  for (const auto arch : {config::ModelArch::kGpt2, config::ModelArch::kLlama}) {
    DYNAMIC_SECTION((arch == config::ModelArch::kGpt2 ? "gpt2" : "llama")) {
      const auto spec = spec_of(arch);
      const auto hf_params = model::hf_parameters(spec);
      const auto targets = peft::select_lora_targets(model::hf_linear_modules(spec), {"all-linear"}, arch);
      auto cfg = lora_config();
      cfg.use_dora = true;
      torch::manual_seed(4);
      model::Transformer m(spec);
      m->eval();
      const auto base = m->forward(kIds).detach();
      const auto lora = peft::attach_lora(*m, targets, hf_params, {}, cfg);
      CHECK(torch::allclose(m->forward(kIds), base, 1e-5, 1e-6));  // m = ||W||_row, B = 0
      // One magnitude per output row of each adapted module, trained with the adapters.
      int64_t expected = 0;
      for (const auto& t : targets) expected += cfg.r * (t.in_features + t.rows) + t.rows;
      CHECK(lora.trainable_parameters == expected);
      auto params = m->named_parameters();
      const std::string dense = arch == config::ModelArch::kGpt2 ? "layers.0.attn.qkv_proj" : "layers.0.attn.qkv_proj";
      const std::string leaf = arch == config::ModelArch::kGpt2 ? "c_attn" : "k_proj";
      const auto& slice = *std::find_if(peft::lora_adapters(*m).at(dense)->slices().begin(),
                                        peft::lora_adapters(*m).at(dense)->slices().end(),
                                        [&](const auto& s) { return s.name == leaf; });
      CHECK(torch::allclose(
          params[dense + ".lora." + leaf + ".magnitude"],
          at::linalg_vector_norm(params[dense + ".weight"].narrow(0, slice.row_offset, slice.rows), 2, {1})));

      // Trained: B and the magnitudes moved. The layer computes m / ||W + s B A||_row (W + s B A) x + b.
      randomise_b(m);
      {
        torch::NoGradGuard no_grad;
        for (auto& [name, p] : m->parameters_by_name()) {
          if (name.ends_with(".magnitude")) p.mul_(1.0 + 0.1 * torch::rand_like(p));
        }
      }
      const auto adapted = m->forward(kIds).detach();
      CHECK((adapted - base).abs().max().item<double>() > 1e-2);
      torch::manual_seed(4);
      model::Transformer merged(spec);
      merged->eval();
      {
        torch::NoGradGuard no_grad;
        auto merged_params = merged->named_parameters();
        for (const auto& [d, adapter] : peft::lora_adapters(*m)) {
          auto w = merged_params[d + ".weight"];
          const auto direct = adapter->merged_weight(w);
          // Rows of one slice by hand: m / ||V||_row * V with V = W + scale B A.
          for (const auto& s : adapter->slices()) {
            const auto v = w.narrow(0, s.row_offset, s.rows) + adapter->scale() * torch::matmul(s.B, s.A);
            const auto want = v * (s.magnitude / at::linalg_vector_norm(v, 2, {1})).view({-1, 1});
            CHECK(torch::allclose(direct.narrow(0, s.row_offset, s.rows), want, 1e-5, 1e-6));
          }
          w.copy_(direct);
        }
      }
      CHECK(torch::allclose(merged->forward(kIds), adapted, 1e-4, 1e-5));

      // The magnitudes travel in peft's files (lora_magnitude_vector) and come back exactly.
      const auto dir = std::filesystem::temp_directory_path() / ("hftrain-dora-" + std::to_string(::getpid()));
      std::filesystem::create_directories(dir);
      const auto tensors = peft::adapter_tensors(*m, lora, hf_params);
      CHECK(tensors.size() == 3 * targets.size());
      peft::write_adapter_files(dir, peft::adapter_config(lora, cfg, arch, "CAUSAL_LM", "/base"), tensors);
      const peft::AdapterFile file = peft::read_adapter_config(dir);
      CHECK(file.lora.use_dora);
      torch::manual_seed(4);
      model::Transformer fresh(spec);
      fresh->eval();
      const auto lora2 = peft::attach_lora(*fresh, targets, hf_params, {}, file.lora);
      peft::load_adapter_weights(*fresh, lora2, hf_params, file);
      CHECK(torch::equal(fresh->forward(kIds), adapted));
      std::filesystem::remove_all(dir);
    }
  }
}

TEST_CASE("lora: DoRA's row norm is a constant in the backward, gradients reach A, B and the magnitude",
          "[peft][lora][dora]") {
  // One Dense layer: loss = sum(y) for y = x W^T + (m / n - 1) W x + (m / n) s B A x, n detached.
  model::Dense layer(6, 4, /*with_bias=*/true);
  torch::manual_seed(8);
  {
    torch::NoGradGuard no_grad;
    layer->weight.normal_();
    layer->bias.normal_();
  }
  layer->weight.requires_grad_(false);
  layer->bias.requires_grad_(false);
  auto cfg = lora_config(2);
  cfg.use_dora = true;
  const model::HfLinear target{.name = "proj", .dense = "", .row_offset = 0, .rows = 4, .in_features = 6};
  auto adapter = std::make_shared<peft::LoraAdapterImpl>(std::vector<model::HfLinear>{target}, cfg, *layer);
  layer->set_adapter(adapter);
  const auto& s = adapter->slices()[0];
  {
    torch::NoGradGuard no_grad;
    s.B.normal_();
    s.magnitude.mul_(1.5);
  }
  const auto x = torch::randn({3, 6});
  layer->forward(x).sum().backward();

  // The same by hand, with the norm a constant.
  const auto A = s.A.detach().clone().requires_grad_(true);
  const auto B = s.B.detach().clone().requires_grad_(true);
  const auto m = s.magnitude.detach().clone().requires_grad_(true);
  const auto W = layer->weight.detach();
  const auto n = at::linalg_vector_norm(W + adapter->scale() * torch::matmul(B, A).detach(), 2, {1}).detach();
  const auto V = W + adapter->scale() * torch::matmul(B, A);
  const auto y = torch::matmul(x, (V * (m / n).view({-1, 1})).t()) + layer->bias.detach();
  y.sum().backward();
  CHECK(torch::allclose(layer->forward(x), y, 1e-5, 1e-6));
  CHECK(torch::allclose(s.A.grad(), A.grad(), 1e-5, 1e-6));
  CHECK(torch::allclose(s.B.grad(), B.grad(), 1e-5, 1e-6));
  CHECK(torch::allclose(s.magnitude.grad(), m.grad(), 1e-5, 1e-6));
}

TEST_CASE("lora on a RoBERTa classifier: its head is the output layer, saved whole under 'classifier'", "[peft]") {
  model::BertSpec spec;
  spec.family = config::Encoder::kRoberta;
  spec.vocab_size = 30;
  spec.hidden_size = 16;
  spec.num_hidden_layers = 1;
  spec.num_attention_heads = 2;
  spec.intermediate_size = 20;
  spec.max_position_embeddings = 12;
  spec.pad_token_id = 1;
  spec.type_vocab_size = 1;
  spec.num_labels = 3;
  const auto linears = model::hf_linear_modules(spec);
  REQUIRE(linears.size() == 6 + 2);  // no pooler; the head's dense and out_proj
  CHECK((linears[6].name == "classifier.dense" && linears[6].output_layer));
  CHECK((linears[7].name == "classifier.out_proj" && linears[7].output_layer && linears[7].rows == 3));
  // all-linear adapts the encoder only; naming the head is refused.
  CHECK(peft::select_lora_targets(linears, {"all-linear"}, config::ModelArch::kBert).size() == 6);
  CHECK_THROWS_WITH(peft::select_lora_targets(linears, {"classifier.dense"}, config::ModelArch::kBert),
                    Catch::Contains("selects the output layer classifier.dense"));
  // "classifier" names the head module: both of its layers train in full, as peft's
  // ModulesToSaveWrapper holds RobertaClassificationHead.
  const auto saved = peft::saved_module_params(model::hf_parameters(spec), {"classifier"});
  CHECK(saved == std::set<std::string>{"classifier.dense.bias", "classifier.dense.weight", "classifier.out_proj.bias",
                                       "classifier.out_proj.weight"});
  // A module above a fused parameter's parts saves it whole; one part alone is refused.
  model::ModelSpec llama;
  llama.arch = config::ModelArch::kLlama;
  llama.n_layer = 1, llama.n_head = 2, llama.n_kv_head = 2, llama.d_model = 8, llama.d_ff = 16;
  llama.vocab_size = 10, llama.max_seq_len = 8;
  CHECK(
      peft::saved_module_params(model::hf_parameters(llama), {"self_attn"}).contains("layers.0.attn.qkv_proj.weight"));
  CHECK_THROWS_WITH(peft::saved_module_params(model::hf_parameters(llama), {"q_proj"}), Catch::Contains("fused"));
}
