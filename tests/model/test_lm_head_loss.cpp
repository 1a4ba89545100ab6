// The chunked output layer + cross-entropy against F::linear + F::cross_entropy: loss and the
// gradients of the hidden states and of the weight, with ignored targets, label smoothing, chunks
// that do and do not divide the rows, tied use (the weight also used elsewhere), no-grad evaluation
// and bf16 autocast.
#include "../torch_catch.h"  // first: see the file

#include <ATen/autocast_mode.h>

#include "model/decoder/lm_head_loss.h"
#include "model/decoder/mixed_mm.h"

using namespace hftrain;
namespace F = torch::nn::functional;

namespace {

struct Case {
  torch::Tensor hidden, weight, labels;
};

Case make_case(int64_t n, int64_t c, int64_t v, uint64_t seed) {
  torch::manual_seed(seed);
  Case k{torch::randn({n, c}, torch::kFloat64).to(torch::kFloat32), torch::randn({v, c}) * 0.5,
         torch::randint(0, v, {n}, torch::kInt64)};
  k.labels.index_put_({torch::arange(0, n, 3)}, -100);  // every third row has no target
  return k;
}

torch::Tensor reference(const torch::Tensor& h, const torch::Tensor& w, const torch::Tensor& y, double smoothing) {
  return F::cross_entropy(F::linear(h, w).to(torch::kFloat32), y,
                          F::CrossEntropyFuncOptions().ignore_index(-100).reduction(torch::kSum).label_smoothing(
                              smoothing));
}

// Loss and both gradients of `loss_fn` at the case, with a non-unit incoming gradient.
std::vector<torch::Tensor> run(const Case& k,
                               const std::function<torch::Tensor(torch::Tensor, torch::Tensor)>& loss_fn) {
  auto h = k.hidden.clone().requires_grad_(true);
  auto w = k.weight.clone().requires_grad_(true);
  auto loss = loss_fn(h, w);
  (loss * 0.37).backward();
  return {loss.detach(), h.grad(), w.grad()};
}

void check_close(const std::vector<torch::Tensor>& ours, const std::vector<torch::Tensor>& ref, double tol) {
  for (size_t i = 0; i < ours.size(); ++i) {
    INFO("tensor " << i << " (0 loss, 1 grad hidden, 2 grad weight)");
    const double scale = std::max(1.0, ref[i].abs().max().item<double>());
    CHECK((ours[i] - ref[i]).abs().max().item<double>() <= tol * scale);
  }
}

}  // namespace

TEST_CASE("lm_head_loss_sum equals linear + cross_entropy, loss and gradients", "[model]") {
  const Case k = make_case(37, 16, 53, 7);
  for (double smoothing : {0.0, 0.1}) {
    const auto ref = run(k, [&](auto h, auto w) { return reference(h, w, k.labels, smoothing); });
    for (int64_t chunk : {int64_t{1}, int64_t{5}, int64_t{37}, int64_t{100}, int64_t{0}}) {
      INFO("label smoothing " << smoothing << ", chunk rows " << chunk);
      const auto ours = run(k, [&](auto h, auto w) {
        return model::lm_head_loss_sum(h, w, k.labels, smoothing, /*softcap=*/0.0, chunk);
      });
      check_close(ours, ref, 1e-5);
    }
  }
}

TEST_CASE("lm_head_loss_sum: a tied weight gets both of its gradients", "[model]") {
  const Case k = make_case(12, 8, 20, 3);
  auto loss_fn = [&](bool fused) {
    return [&, fused](torch::Tensor h, torch::Tensor w) {
      const auto x = h + F::embedding(k.labels.clamp_min(0), w);  // the weight also embeds
      return fused ? model::lm_head_loss_sum(x, w, k.labels, 0.0, /*softcap=*/0.0, 4) : reference(x, w, k.labels, 0.0);
    };
  };
  check_close(run(k, loss_fn(true)), run(k, loss_fn(false)), 1e-5);
}

TEST_CASE("lm_head_loss_sum: no targets give zero loss and zero gradients, no grad mode computes none", "[model]") {
  Case k = make_case(6, 4, 9, 5);
  k.labels.fill_(-100);
  const auto ours =
      run(k, [&](auto h, auto w) { return model::lm_head_loss_sum(h, w, k.labels, 0.0, /*softcap=*/0.0, 4); });
  CHECK(ours[0].item<double>() == 0.0);
  CHECK(ours[1].abs().max().item<double>() == 0.0);
  CHECK(ours[2].abs().max().item<double>() == 0.0);

  const Case e = make_case(10, 4, 9, 6);
  torch::NoGradGuard no_grad;
  const auto h = e.hidden.clone().requires_grad_(true);
  const auto loss = model::lm_head_loss_sum(h, e.weight, e.labels, 0.0, /*softcap=*/0.0, 3);
  CHECK_FALSE(loss.requires_grad());
  CHECK(loss.item<double>() == Approx(reference(e.hidden, e.weight, e.labels, 0.0).item<double>()).epsilon(1e-6));
}

TEST_CASE("lm_head_loss_sum under bf16 autocast matches linear + cross_entropy under it", "[model]") {
  const Case k = make_case(24, 32, 40, 11);
  auto autocast = [](auto fn) {
    return [fn](torch::Tensor h, torch::Tensor w) {
      at::autocast::set_autocast_enabled(at::kCPU, true);
      at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
      auto loss = fn(h, w);
      at::autocast::set_autocast_enabled(at::kCPU, false);
      at::autocast::clear_cache();
      return loss;
    };
  };
  const auto ref = run(k, autocast([&](auto h, auto w) { return reference(h, w, k.labels, 0.0); }));
  const auto ours = run(
      k, autocast([&](auto h, auto w) { return model::lm_head_loss_sum(h, w, k.labels, 0.0, /*softcap=*/0.0, 7); }));
  CHECK(ours[1].scalar_type() == torch::kFloat32);
  CHECK(ours[2].scalar_type() == torch::kFloat32);
  check_close(ours, ref, 2e-2);  // bf16 matmuls: both round the logits the same way, not the sums
}

// Gemma 2's final soft-capping: the loss of cap * tanh(logits / cap) as transformers computes it,
// with its gradients through the tanh, in fp32 and with label smoothing; chunks that split rows.
TEST_CASE("lm_head_loss_sum with soft-capped logits equals capping the linear layer's output", "[model]") {
  Case k = make_case(29, 12, 41, 11);
  k.weight = k.weight * 6;  // logits of tens: the cap (here 5) bends them
  const double cap = 5.0;
  for (double smoothing : {0.0, 0.1}) {
    const auto ref = run(k, [&](auto h, auto w) {
      const auto logits = torch::tanh(F::linear(h, w) / cap) * cap;
      return F::cross_entropy(logits, k.labels,
                              F::CrossEntropyFuncOptions().ignore_index(-100).reduction(torch::kSum).label_smoothing(
                                  smoothing));
    });
    for (int64_t chunk : {int64_t{4}, int64_t{29}}) {
      INFO("label smoothing " << smoothing << ", chunk rows " << chunk);
      check_close(
          run(k, [&](auto h, auto w) { return model::lm_head_loss_sum(h, w, k.labels, smoothing, cap, chunk); }), ref,
          1e-5);
    }
  }
  // Capping changes the loss (the test would pass vacuously otherwise).
  const auto uncapped = run(k, [&](auto h, auto w) { return reference(h, w, k.labels, 0.0); });
  const auto capped = run(k, [&](auto h, auto w) { return model::lm_head_loss_sum(h, w, k.labels, 0.0, cap, 4); });
  CHECK((uncapped[0] - capped[0]).abs().item<double>() > 1.0);
}

// Confident predictions: p(target) near 1, so the target's gradient p - 1 is small. Under bf16 it
// must be formed before rounding (bf16(p) - 1 would be off by up to 2^-9 / (1 - p) relative).
TEST_CASE("lm_head_loss_sum under bf16 autocast keeps the gradient of confident predictions", "[model]") {
  Case k = make_case(16, 8, 30, 13);
  k.weight = k.weight * 8;  // logits of tens: softmax near one-hot
  k.labels = (k.hidden.mm(k.weight.t())).argmax(1);
  const auto fp32 = run(k, [&](auto h, auto w) { return reference(h, w, k.labels, 0.0); });
  at::autocast::set_autocast_enabled(at::kCPU, true);
  at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
  const auto ours =
      run(k, [&](auto h, auto w) { return model::lm_head_loss_sum(h, w, k.labels, 0.0, /*softcap=*/0.0, 5); });
  at::autocast::set_autocast_enabled(at::kCPU, false);
  at::autocast::clear_cache();
  // The hidden states' gradient is the (small) error signal times the weight: relative to its own
  // size it stays within bf16's rounding of the product, not of p.
  const double scale = fp32[1].abs().max().item<double>();
  REQUIRE(scale > 0);
  CHECK((ours[1] - fp32[1]).abs().max().item<double>() <= 0.1 * scale);
}

TEST_CASE("lm_head_loss_sum on a CUDA device: fp32 and bf16 autocast against linear + cross_entropy", "[model][gpu]") {
  if (!torch::cuda::is_available()) {
    WARN("no CUDA device; skipped");
    return;
  }
  // A GPT-2-sized vocabulary, rows over several chunks.
  Case k = make_case(3000, 64, 50257, 17);
  k.hidden = k.hidden.to(torch::kCUDA);
  k.weight = k.weight.to(torch::kCUDA);
  k.labels = k.labels.to(torch::kCUDA);
  const auto ref32 = run(k, [&](auto h, auto w) { return reference(h, w, k.labels, 0.0); });
  for (const double smoothing : {0.0, 0.1}) {
    INFO("fp32, label smoothing " << smoothing);
    const auto ref =
        smoothing == 0 ? ref32 : run(k, [&](auto h, auto w) { return reference(h, w, k.labels, smoothing); });
    check_close(
        run(k,
            [&](auto h, auto w) { return model::lm_head_loss_sum(h, w, k.labels, smoothing, /*softcap=*/0.0, 1024); }),
        ref,
        1e-4);  // tf32 may be on in either
  }
  auto autocast = [](auto fn) {
    return [fn](torch::Tensor h, torch::Tensor w) {
      at::autocast::set_autocast_enabled(at::kCUDA, true);
      at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
      auto loss = fn(h, w);
      at::autocast::set_autocast_enabled(at::kCUDA, false);
      at::autocast::clear_cache();
      return loss;
    };
  };
  const auto ref = run(k, autocast([&](auto h, auto w) { return reference(h, w, k.labels, 0.0); }));
  const auto ours = run(
      k, autocast([&](auto h, auto w) { return model::lm_head_loss_sum(h, w, k.labels, 0.0, /*softcap=*/0.0, 1024); }));
  CHECK(ours[1].scalar_type() == torch::kFloat32);
  check_close(ours, ref, 2e-2);
}

TEST_CASE("fp32 products of bf16 matrices: the old pair of passes on the CPU, one call on CUDA", "[model][gpu]") {
  const auto check_device = [](const torch::Device& device) {
    const auto bf16 = torch::TensorOptions().dtype(torch::kBFloat16).device(device);
    const torch::Tensor a = torch::randn({37, 64}, bf16);
    const torch::Tensor b = torch::randn({64, 129}, bf16);
    torch::Tensor out = torch::empty({37, 129}, bf16.dtype(torch::kFloat32));
    model::mm_into(out, a, b);
    torch::Tensor acc = torch::ones({37, 129}, bf16.dtype(torch::kFloat32));
    model::addmm_into(acc, a, b);
    if (!model::fp32_output_products(device)) {  // bit for bit what the layer did before
      CHECK(torch::equal(out, torch::mm(a, b).to(torch::kFloat32)));
      CHECK(torch::equal(acc, torch::ones_like(acc).add_(torch::mm(a, b))));
      return;
    }
    const torch::Tensor exact = torch::mm(a.to(torch::kFloat64), b.to(torch::kFloat64));
    const double scale = exact.abs().max().item<double>();
    CHECK((out.to(torch::kFloat64) - exact).abs().max().item<double>() <= 1e-3 * scale);  // no bf16 rounding
    CHECK((acc.to(torch::kFloat64) - exact - 1).abs().max().item<double>() <= 1e-3 * scale);
  };
  CHECK_FALSE(model::fp32_output_products(torch::kCPU));
  check_device(torch::kCPU);
  if (!torch::cuda::is_available()) {
    WARN("no CUDA device; the CUDA half skipped");
    return;
  }
  if (!model::fp32_output_products(torch::Device(torch::kCUDA, 0))) {
    WARN("this build's CUDA mm.dtype_out refused or mis-computed: the output layer copies instead");
  }
  check_device(torch::Device(torch::kCUDA, 0));
}
