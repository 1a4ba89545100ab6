// QLoRA's quantized frozen base (peft/quantized_linear.h): a quantized layer computes with its
// dequantized weight, forward and backward, without a gradient for it; quantize_frozen_base
// quantizes the frozen linear layers of a LoRA model (not the output layer), keeps names and
// shapes, frees the full-precision weights, and the adapters still train.
#include "../torch_catch.h"  // first: see the file

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "model/hf/hf_modules.h"
#include "model/decoder/transformer.h"
#include "peft/lora.h"
#include "peft/quantized_linear.h"
#include "util/error.h"

using namespace hftrain;
namespace F = torch::nn::functional;

namespace {

model::ModelSpec llama_spec() {
  model::ModelSpec s;
  s.arch = config::ModelArch::kLlama;
  s.n_layer = 2, s.n_head = 4, s.n_kv_head = 2, s.d_model = 64, s.d_ff = 96, s.max_seq_len = 32;
  s.vocab_size = 50, s.norm_eps = 1e-5, s.init_std = 0.2, s.rope_theta = 10000.0, s.tie_embeddings = false;
  return s;
}

}  // namespace

TEST_CASE("quantized linear: forward and input gradient through the dequantized weight, none for it",
          "[peft][qlora]") {
  torch::manual_seed(3);
  const auto w = torch::randn({64, 256}) * 0.1;
  const auto bias = torch::randn({64});
  for (const auto kind : {config::QuantizeBase::kNf4, config::QuantizeBase::kInt8}) {
    INFO(peft::quantize_base_name(kind));
    const peft::QuantizedWeight q({w}, kind);
    const auto wd = q.dequantize(torch::kFloat32);
    REQUIRE(wd.sizes() == w.sizes());
    // The quantization error is that of the format (NF4 about 10% of a block's absmax, int8 0.4%).
    const double err = (wd - w).abs().max().item<double>() / w.abs().max().item<double>();
    CHECK(err < (kind == config::QuantizeBase::kNf4 ? 0.15 : 0.005));
    CHECK(err > 0);
    // NF4: half a byte a weight, a byte per 64 (absmax codes), the 256-entry code map; int8: a byte
    // a weight and a scale per row.
    CHECK(q.bytes() < w.numel() * 4 / (kind == config::QuantizeBase::kNf4 ? 6 : 3));
    CHECK(q.bytes() == peft::quantized_bytes(64, 256, kind));  // what `hftrain plan` counts

    const auto x = torch::randn({3, 5, 256}).requires_grad_(true);
    const auto y = q.linear(x, bias);
    const auto x_ref = x.detach().clone().requires_grad_(true);
    const auto y_ref = F::linear(x_ref, wd, bias);
    CHECK((y - y_ref).abs().max().item<double>() < 1e-5);
    const auto g = torch::randn(y.sizes());
    y.backward(g);
    y_ref.backward(g);
    CHECK((x.grad() - x_ref.grad()).abs().max().item<double>() < 1e-5);
  }
  const auto vector = torch::randn({8});
  CHECK_THROWS_AS(peft::QuantizedWeight({vector}, config::QuantizeBase::kNf4), util::ConfigError);
}

TEST_CASE("quantized linear under bf16 autocast computes in bf16", "[peft][qlora]") {
  torch::manual_seed(4);
  const auto w = torch::randn({16, 64}) * 0.1;
  const peft::QuantizedWeight q({w}, config::QuantizeBase::kNf4);
  const auto x = torch::randn({4, 64}).requires_grad_(true);
  at::autocast::set_autocast_enabled(at::kCPU, true);
  at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
  const auto y = q.linear(x, torch::Tensor());
  const auto ref = F::linear(x.detach(), q.dequantize(torch::kFloat32));
  y.sum().backward();
  at::autocast::set_autocast_enabled(at::kCPU, false);
  at::autocast::clear_cache();
  CHECK(y.scalar_type() == torch::kBFloat16);
  CHECK(x.grad().scalar_type() == torch::kFloat32);  // the input's dtype
  CHECK((y.to(torch::kFloat32) - ref).abs().max().item<double>() < 0.05);
}

TEST_CASE("quantize_frozen_base: the frozen linear layers of a LoRA model, names and shapes kept, adapters train",
          "[peft][qlora]") {
  const auto spec = llama_spec();
  torch::manual_seed(1);
  model::Transformer m(spec);
  const auto targets = peft::select_lora_targets(model::hf_linear_modules(spec), {"all-linear"}, spec.arch);
  config::LoraConfig cfg;
  cfg.r = 4, cfg.alpha = 8;
  peft::attach_lora(*m, targets, model::hf_parameters(spec), {}, cfg);
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& [name, p] : m->parameters_by_name()) shapes[name] = p.sizes().vec();
  const int64_t frozen_before = peft::frozen_bytes(*m);
  const auto ids = torch::tensor({{1, 5, 9, 2, 7, 3, 11, 4}}, torch::kInt64);
  const auto labels = torch::tensor({{5, 9, 2, 7, 3, 11, 4, 8}}, torch::kInt64);
  const double loss_full = m->loss_sum(ids, labels, 0.0).item<double>();

  const auto layout = model::hf_linear_modules(spec);
  const peft::QuantizedBase q = peft::quantize_frozen_base(*m, config::QuantizeBase::kNf4, layout);
  // Per block: qkv_proj, o_proj, gate_up_proj, down_proj; lm_head (untied) stays as it was.
  CHECK(q.layers == 4 * spec.n_layer);
  CHECK(q.bytes_after * 5 < q.bytes_before);
  for (const auto& [name, p] : m->parameters_by_name()) {
    INFO(name);
    CHECK(p.sizes().vec() == shapes[name]);
  }
  const int64_t frozen_after = peft::frozen_bytes(*m);
  CHECK(frozen_after == frozen_before - q.bytes_before + q.bytes_after);
  CHECK(peft::quantize_frozen_base(*m, config::QuantizeBase::kNf4, layout).layers == 0);  // once only

  // Close to the full-precision model (NF4's error), and the adapters get gradients.
  const auto loss = m->loss_sum(ids, labels, 0.0);
  CHECK(std::abs(loss.item<double>() - loss_full) < 0.1 * loss_full);
  loss.backward();
  int64_t with_grad = 0;
  for (const auto& [name, p] : m->parameters_by_name()) {
    if (name.find(".lora.") != std::string::npos && name.ends_with(".A")) with_grad += p.grad().defined();
    if (!p.requires_grad()) CHECK_FALSE(p.grad().defined());
  }
  CHECK(with_grad > 0);
}

TEST_CASE("DoRA on a quantized base: magnitudes and norms from the dequantized weight", "[peft][qlora][dora]") {
  torch::manual_seed(6);
  model::Dense layer(64, 16, /*with_bias=*/false);
  {
    torch::NoGradGuard no_grad;
    layer->weight.normal_(0.0, 0.1);
  }
  layer->weight.requires_grad_(false);
  layer->set_frozen_weight(std::make_shared<peft::QuantizedWeight>(std::vector<torch::Tensor>{layer->weight.clone()},
                                                                   config::QuantizeBase::kNf4));
  const auto wq = layer->effective_weight(torch::kFloat32);  // the NF4 values, not the original ones
  config::LoraConfig cfg;
  cfg.r = 4, cfg.alpha = 8, cfg.use_dora = true;
  const model::HfLinear target{.name = "proj", .dense = "", .row_offset = 0, .rows = 16, .in_features = 64};
  auto adapter = std::make_shared<peft::LoraAdapterImpl>(std::vector<model::HfLinear>{target}, cfg, *layer);
  const auto& s = adapter->slices()[0];
  CHECK(torch::allclose(s.magnitude, at::linalg_vector_norm(wq, 2, {1})));
  layer->set_adapter(adapter);
  const auto x = torch::randn({3, 64});
  CHECK(torch::allclose(layer->forward(x), F::linear(x, wq), 1e-5, 1e-6));  // starts at the quantized base
  {
    torch::NoGradGuard no_grad;
    s.B.normal_(0.0, 0.1);
    s.magnitude.mul_(1.2);
  }
  const auto v = wq + adapter->scale() * torch::matmul(s.B, s.A).detach();
  const auto want = F::linear(x, v * (s.magnitude.detach() / at::linalg_vector_norm(v, 2, {1})).view({-1, 1}));
  CHECK(torch::allclose(layer->forward(x), want, 1e-5, 1e-6));
}
