#include "model/lm_head_loss.h"

#include <charconv>
#include <optional>
#include <string>

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "util/env.h"
#include "util/error.h"

namespace hftrain::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The fp32 logits of one chunk. On the CPU 32 MiB stays in cache. On a GPU chunks that small
// starve the matrix products: GPT-2's 50k vocabulary gives 166 rows, 99 chunks for 16 x 1024
// tokens, each re-reading the whole weight and adding a (V, C) product into the fp32 weight
// gradient (about 2,900 kernels a step); on an H100 hftrain's step took 97.5 ms against plain
// PyTorch's 53.4 (2026-11-25, bench/gpu_throughput.sh), most of it plausibly here. 1 GiB there:
// 5 chunks of 3,333 rows, still far below the full logits plain PyTorch keeps (and their gradient).
constexpr int64_t kCpuChunkBytes = int64_t{32} << 20;
constexpr int64_t kGpuChunkBytes = int64_t{1} << 30;
constexpr int64_t kIgnoreIndex = -100;

class LmHeadLoss : public torch::autograd::Function<LmHeadLoss> {
 public:
  // `need_hidden`, `need_weight`: whether a backward will ask for these gradients (decided by the
  // caller: the context cannot tell during forward). `compute`: the matmuls' dtype.
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& hidden, const torch::Tensor& weight,
                               const torch::Tensor& labels, double smoothing, int64_t chunk_rows, bool need_hidden,
                               bool need_weight, c10::ScalarType compute) {
    // The casts below are the autocast policy for this layer; nothing inside may be re-cast.
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    const int64_t n = hidden.size(0);
    const int64_t vocab = weight.size(0);
    const auto f32 = hidden.options().dtype(torch::kFloat32);
    const torch::Tensor h = hidden.to(compute);
    const torch::Tensor w = weight.to(compute);
    const torch::Tensor w_t = w.t();
    torch::Tensor loss = torch::zeros({}, f32);
    torch::Tensor grad_hidden = need_hidden ? torch::empty({n, hidden.size(1)}, f32) : torch::Tensor();
    torch::Tensor grad_weight = need_weight ? torch::zeros({vocab, weight.size(1)}, f32) : torch::Tensor();
    torch::Tensor buffer = torch::empty({std::min(chunk_rows, n), vocab}, f32);  // (rows, V) logits
    const double on_target = 1.0 - smoothing;
    for (int64_t start = 0; start < n; start += chunk_rows) {
      const int64_t rows = std::min(chunk_rows, n - start);
      const torch::Tensor h_rows = h.narrow(0, start, rows);
      torch::Tensor z = buffer.narrow(0, 0, rows);
      if (compute == torch::kFloat32) {
        torch::mm_out(z, h_rows, w_t);
      } else {
        z.copy_(torch::mm(h_rows, w_t));
      }
      const torch::Tensor y = labels.narrow(0, start, rows);
      const torch::Tensor valid = y.ne(kIgnoreIndex).to(torch::kFloat32);  // (rows)
      const torch::Tensor target = y.clamp_min(0).unsqueeze(1);             // (rows, 1)
      const torch::Tensor lse = z.logsumexp(1);                              // (rows)
      torch::Tensor row_loss = lse - z.gather(1, target).squeeze(1);
      if (smoothing > 0) row_loss = on_target * row_loss + smoothing * (lse - z.mean(1));
      loss.add_((row_loss * valid).sum());
      if (!need_hidden && !need_weight) continue;
      // d loss / d z = softmax(z) - (1 - s) onehot(y) - s / V on the rows with a target, else 0.
      z.sub_(lse.unsqueeze(1)).exp_();
      z.scatter_add_(1, target, torch::full({rows, 1}, -on_target, f32));
      if (smoothing > 0) z.sub_(smoothing / static_cast<double>(vocab));
      z.mul_(valid.unsqueeze(1));
      const torch::Tensor g = compute == torch::kFloat32 ? z : z.to(compute);
      if (need_hidden) {
        torch::Tensor out = grad_hidden.narrow(0, start, rows);
        if (compute == torch::kFloat32) {
          torch::mm_out(out, g, w);
        } else {
          out.copy_(torch::mm(g, w));
        }
      }
      if (need_weight) {
        if (compute == torch::kFloat32) {
          grad_weight.addmm_(g.t(), h_rows);
        } else {
          grad_weight.add_(torch::mm(g.t(), h_rows));
        }
      }
    }
    ctx->saved_data["grad_hidden"] = grad_hidden;
    ctx->saved_data["grad_weight"] = grad_weight;
    ctx->saved_data["hidden_dtype"] = hidden.scalar_type();
    ctx->saved_data["weight_dtype"] = weight.scalar_type();
    return loss;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const torch::Tensor& g = grad_outputs[0];  // () : the loss's gradient, a scalar
    auto scaled = [&](const char* key, const char* dtype_key) {
      const torch::Tensor saved = ctx->saved_data[key].toTensor();
      if (!saved.defined()) return torch::Tensor();
      return (saved * g).to(ctx->saved_data[dtype_key].toScalarType());
    };
    return {scaled("grad_hidden", "hidden_dtype"), scaled("grad_weight", "weight_dtype"), torch::Tensor(),
            torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// Rows per chunk when the caller leaves it open; HFTRAIN_LM_HEAD_CHUNK_ROWS (a positive integer)
// overrides the device's default, for measuring one against another.
int64_t default_chunk_rows(c10::DeviceType device, int64_t vocab) {
  static const int64_t from_env = [] {
    const std::optional<std::string> v = util::Environment::process().get("HFTRAIN_LM_HEAD_CHUNK_ROWS");
    if (!v || v->empty()) return int64_t{0};
    int64_t rows = 0;
    const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), rows);
    if (ec != std::errc() || end != v->data() + v->size() || rows <= 0) {
      throw util::ConfigError("environment variable HFTRAIN_LM_HEAD_CHUNK_ROWS='" + v->substr(0, 40) +
                                  "' is not a positive integer",
                              "unset it, or give the rows of one chunk of the LM head's logits, e.g. 4096");
    }
    return rows;
  }();
  if (from_env > 0) return from_env;
  const int64_t bytes = device == c10::DeviceType::CPU ? kCpuChunkBytes : kGpuChunkBytes;
  return std::max<int64_t>(1, bytes / (vocab * 4));
}

}  // namespace

torch::Tensor lm_head_loss_sum(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& labels,
                               double label_smoothing, int64_t chunk_rows) {
  TORCH_CHECK(hidden.dim() == 2 && weight.dim() == 2 && hidden.size(1) == weight.size(1) &&
                  labels.numel() == hidden.size(0),
              "lm_head_loss_sum: hidden (N, C), weight (V, C) and labels (N) do not fit");
  const int64_t vocab = weight.size(0);
  const auto device = hidden.device().type();
  if (chunk_rows <= 0) chunk_rows = default_chunk_rows(device, vocab);
  const c10::ScalarType compute =
      at::autocast::is_autocast_enabled(device) ? at::autocast::get_autocast_dtype(device) : weight.scalar_type();
  const bool grad = torch::GradMode::is_enabled();
  return LmHeadLoss::apply(hidden, weight, labels.reshape({-1}), label_smoothing, chunk_rows,
                           grad && hidden.requires_grad(), grad && weight.requires_grad(), compute);
}

}  // namespace hftrain::model
