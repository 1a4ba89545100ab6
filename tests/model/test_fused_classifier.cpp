// The fused classifier (model/decoder/fused_classifier.h, kernels/fused_classifier.cu): its per-element
// math (kernels/classifier_math.h, the header the kernel compiles) against ATen in fp64 on the
// CPU, including the online softmax's pairwise merges in any split; its ATen composite against
// the same reference; and, on a GPU, the kernel against the composite (fp32 and bf16 gradients,
// a vocabulary of 50257, label smoothing, a row stride wider than the row).
#include "../torch_catch.h"  // first: see the file

#include "kernels/classifier_math.h"
#include "model/decoder/fused_classifier.h"

using namespace hftrain;
namespace k = hftrain::kernels;

namespace {

// fp64 reference: row losses and gradients of cross_entropy with label smoothing.
std::pair<torch::Tensor, torch::Tensor> reference(const torch::Tensor& logits, const torch::Tensor& targets,
                                                  double smoothing) {
  const torch::Tensor x = logits.to(torch::kFloat64).detach().requires_grad_(true);
  const torch::Tensor loss = torch::nn::functional::cross_entropy(
      x, targets, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone).label_smoothing(smoothing));
  loss.sum().backward();
  return {loss.detach(), x.grad()};
}

// The header's math on the host, one row at a time; the row's logits pushed in `parts` pieces
// whose statistics are then merged (as threads and warps do).
std::pair<torch::Tensor, torch::Tensor> header_math(const torch::Tensor& logits, const torch::Tensor& targets,
                                                    double smoothing, int64_t parts) {
  const int64_t rows = logits.size(0), vocab = logits.size(1);
  torch::Tensor losses = torch::empty({rows}, torch::kFloat32);
  torch::Tensor grads = torch::empty({rows, vocab}, torch::kFloat32);
  const auto s = static_cast<float>(smoothing);
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = logits[r].data_ptr<float>();
    const int64_t t = targets[r].item<int64_t>();
    k::RowStats total = k::row_stats_empty();
    for (int64_t p = 0; p < parts; ++p) {
      k::RowStats part = k::row_stats_empty();
      for (int64_t j = p; j < vocab; j += parts) part = k::row_stats_push(part, x[j]);
      total = k::row_stats_merge(part, total);
    }
    losses[r] = k::row_loss(total, x[t], s, vocab);
    const float lse = k::log_sum_exp(total);
    float* g = grads[r].data_ptr<float>();
    for (int64_t j = 0; j < vocab; ++j) g[j] = k::logit_grad(x[j], lse, j == t, s, vocab);
  }
  return {losses, grads};
}

double max_rel(const torch::Tensor& got, const torch::Tensor& want) {
  const torch::Tensor w = want.to(torch::kFloat64);
  return ((got.to(torch::kFloat64) - w).abs().max() / w.abs().max().clamp_min(1e-30)).item<double>();
}

}  // namespace

TEST_CASE("fused classifier math: online softmax, loss and gradient against ATen", "[model][fused_classifier]") {
  torch::manual_seed(3);
  for (const int64_t vocab : {int64_t{7}, int64_t{1000}, int64_t{50257}}) {
    // Logits of very different scales, one row with a confident target.
    torch::Tensor logits = torch::randn({5, vocab}) * torch::tensor({0.1f, 1.0f, 5.0f, 20.0f, 1.0f}).unsqueeze(1);
    const torch::Tensor targets = torch::randint(0, vocab, {5}, torch::kInt64);
    logits[4][targets[4].item<int64_t>()] = 40.0f;
    for (const double smoothing : {0.0, 0.1}) {
      for (const int64_t parts : {int64_t{1}, int64_t{3}, int64_t{512}}) {
        INFO("vocab " << vocab << ", smoothing " << smoothing << ", parts " << parts);
        const auto [want_loss, want_grad] = reference(logits, targets, smoothing);
        const auto [loss, grad] = header_math(logits, targets, smoothing, parts);
        // One running sum over 50257 fp32 terms rounds more than pieces merged pairwise (what the
        // kernel's 512 threads do).
        const double tolerance = parts == 1 ? 1e-4 : 1e-5;
        CHECK(max_rel(loss, want_loss) < tolerance);
        CHECK(max_rel(grad, want_grad) < tolerance);
      }
      INFO("composite, vocab " << vocab << ", smoothing " << smoothing);
      const auto [want_loss, want_grad] = reference(logits, targets, smoothing);
      torch::Tensor grad = torch::empty_like(logits);
      const torch::Tensor loss = model::classifier_composite(logits, targets, smoothing, grad);
      CHECK(max_rel(loss, want_loss) < 1e-5);
      CHECK(max_rel(grad, want_grad) < 1e-5);
    }
  }
}

TEST_CASE("fused classifier merges: empty pieces and an all -inf row", "[model][fused_classifier]") {
  const k::RowStats a = k::row_stats_push(k::row_stats_empty(), 2.0f);
  const k::RowStats merged = k::row_stats_merge(a, k::row_stats_empty());
  CHECK(merged.max == 2.0f);
  CHECK(merged.sum == 1.0f);
  CHECK(k::row_stats_merge(k::row_stats_empty(), a).sum == 1.0f);
  CHECK(k::log_sum_exp(k::row_stats_push(a, 2.0f)) == Approx(2.0 + std::log(2.0)));
}

TEST_CASE("fused classifier kernel on CUDA equals the composite", "[model][fused_classifier][gpu]") {
  torch::Tensor unused;
  CHECK_FALSE(model::classifier_fused(torch::zeros({2, 3}), torch::zeros({2}, torch::kInt64), 0.0, torch::Tensor(),
                                      unused));  // the CPU never takes it
  if (!torch::cuda::is_available()) {
    WARN("no CUDA device; skipped");
    return;
  }
  if (!model::fused_classifier_built()) {
    WARN("this build has no kernels (no nvcc at build time); skipped");
    return;
  }
  torch::manual_seed(5);
  const int64_t rows = 300, vocab = 50257, stride = 50304;
  const auto cuda = torch::TensorOptions().device(torch::kCUDA);
  const torch::Tensor storage = torch::randn({rows, stride}, cuda) * 3;
  const torch::Tensor logits = storage.narrow(1, 0, vocab);  // rows padded past the vocabulary
  const torch::Tensor targets = torch::randint(0, vocab, {rows}, cuda.dtype(torch::kInt64));
  for (const double smoothing : {0.0, 0.1}) {
    INFO("smoothing " << smoothing);
    torch::Tensor want_grad = torch::empty({rows, vocab}, cuda);
    const torch::Tensor want_loss = model::classifier_composite(logits, targets, smoothing, want_grad);
    torch::Tensor loss;
    torch::Tensor grad32 = torch::empty({rows, stride}, cuda).narrow(1, 0, vocab);
    REQUIRE(model::classifier_fused(logits, targets, smoothing, grad32, loss));
    CHECK(max_rel(loss.cpu(), want_loss.cpu()) < 1e-5);
    CHECK(max_rel(grad32.cpu(), want_grad.cpu()) < 1e-5);
    torch::Tensor grad16 = torch::empty({rows, stride}, cuda.dtype(torch::kBFloat16)).narrow(1, 0, vocab);
    REQUIRE(model::classifier_fused(logits, targets, smoothing, grad16, loss));
    CHECK(max_rel(grad16.cpu(), want_grad.cpu()) < 1e-2);
    // In place over the logits (the fp32 layer's buffer), and the losses alone.
    torch::Tensor copy = storage.clone().narrow(1, 0, vocab);
    REQUIRE(model::classifier_fused(copy, targets, smoothing, copy, loss));
    CHECK(max_rel(copy.cpu(), want_grad.cpu()) < 1e-5);
    REQUIRE(model::classifier_fused(logits, targets, smoothing, torch::Tensor(), loss));
    CHECK(max_rel(loss.cpu(), want_loss.cpu()) < 1e-5);
  }
}
