#include "model/decoder/lm_head_loss.h"

#include <optional>
#include <string>

#include <ATen/autocast_mode.h>
#include <torch/torch.h>

#include "model/decoder/fused_classifier.h"
#include "model/decoder/mixed_mm.h"
#include "util/env.h"
#include "util/error.h"
#include "util/strings.h"

namespace hftrain::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The fp32 logits of one chunk. On the CPU 32 MiB stays in cache. On a GPU chunks that small
// starve the matrix products: GPT-2's 50k vocabulary gives 166 rows, 99 chunks for 16 x 1024
// tokens, each re-reading the whole weight and adding a (V, C) product into the fp32 weight
// gradient; on an H100 hftrain's step took 96.5 ms that way against 68.4 ms with 1 GiB chunks
// (5,341 rows), 70.1 with 2,048 rows and 67.8 with the whole batch in one chunk (2026-11-26,
// bench/gpu_throughput.sh's GPT-2 124M step). Past a few thousand rows the size no longer
// matters: what is left is the passes over the (rows, V) tensors, so each is one fused kernel.
constexpr int64_t kCpuChunkBytes = int64_t{32} << 20;
constexpr int64_t kGpuChunkBytes = int64_t{1} << 30;
constexpr int64_t kIgnoreIndex = -100;

class LmHeadLoss : public torch::autograd::Function<LmHeadLoss> {
 public:
  // `need_hidden`, `need_weight`: whether a backward will ask for these gradients (decided by the
  // caller: the context cannot tell during forward). `compute`: the matmuls' dtype.
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& hidden, const torch::Tensor& weight,
                               const torch::Tensor& labels, double smoothing, double softcap, int64_t chunk_rows,
                               bool need_hidden, bool need_weight, c10::ScalarType compute, int64_t parallel) {
    // The casts below are the autocast policy for this layer; nothing inside may be re-cast.
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    const int64_t n = hidden.size(0);
    const int64_t vocab = weight.size(0);
    // A vocabulary split over a tensor-parallel group: this rank's rows of the weight, and the
    // reductions over the group that make its log-softmax the whole vocabulary's.
    const VocabParallel* vp = reinterpret_cast<const VocabParallel*>(parallel);
    const int64_t whole_vocab = vp ? vp->slice.vocab : vocab;
    const auto f32 = hidden.options().dtype(torch::kFloat32);
    const torch::Tensor h = hidden.to(compute);
    const torch::Tensor w = weight.to(compute);
    const torch::Tensor w_t = w.t();
    torch::Tensor loss = torch::zeros({}, f32);
    torch::Tensor grad_hidden = need_hidden ? torch::empty({n, hidden.size(1)}, f32) : torch::Tensor();
    torch::Tensor grad_weight = need_weight ? torch::zeros({vocab, weight.size(1)}, f32) : torch::Tensor();
    const int64_t max_rows = std::min(chunk_rows, n);
    // Per chunk: the logits z, their log-softmax (fp32), and d loss / d z in the compute dtype
    // (written over z when that is fp32). Each pass over a (rows, V) tensor is one fused kernel:
    // on a GPU the step is bound by this memory traffic (see the comment on kGpuChunkBytes).
    torch::Tensor logits = torch::empty({max_rows, vocab}, f32);
    torch::Tensor log_probs = torch::empty({max_rows, vocab}, f32);
    // Soft-capped logits c = cap tanh(z / cap) need a buffer of their own: z's keeps t = tanh(z / cap)
    // for the backward (dc/dz = 1 - t^2), and c's takes the fp32 gradient once c is read.
    torch::Tensor capped = softcap > 0 ? torch::empty({max_rows, vocab}, f32) : torch::Tensor();
    torch::Tensor grads = compute != torch::kFloat32 ? torch::empty({max_rows, vocab}, f32.dtype(compute))
                          : softcap > 0              ? capped
                                                     : logits;
    const double on_target = 1.0 - smoothing;
    for (int64_t start = 0; start < n; start += chunk_rows) {
      const int64_t rows = std::min(chunk_rows, n - start);
      const torch::Tensor h_rows = h.narrow(0, start, rows);
      torch::Tensor z = logits.narrow(0, 0, rows);
      if (compute == torch::kFloat32) {
        torch::mm_out(z, h_rows, w_t);
      } else {
        mm_into(z, h_rows, w_t);  // fp32 logits in one call on CUDA
      }
      const torch::Tensor y = labels.narrow(0, start, rows);
      const torch::Tensor valid = y.ne(kIgnoreIndex).to(torch::kFloat32);  // (rows)
      // This rank's entry of each target (its column; rows whose target lies on another rank of
      // a split vocabulary point at column 0 and are left out through `mine`).
      torch::Tensor mine;
      torch::Tensor target = y.clamp_min(0).unsqueeze(1);  // (rows, 1)
      if (vp) {
        mine = y.ge(vp->slice.begin).logical_and(y.lt(vp->slice.end)).unsqueeze(1);
        target = (target - vp->slice.begin).masked_fill(mine.logical_not(), 0);
      }
      torch::Tensor lp = log_probs.narrow(0, 0, rows);
      torch::Tensor c = z;
      if (softcap > 0) {  // Gemma 2: as transformers, logits / cap, tanh, times cap
        z.div_(softcap).tanh_();
        c = capped.narrow(0, 0, rows);
        torch::mul_out(c, z, softcap);
      }
      // On CUDA with the kernel asked for (model/decoder/fused_classifier.h): the row losses and the
      // gradient in one kernel, the log-softmax buffer never written.
      torch::Tensor fused_loss;
      const bool fused = !vp && softcap == 0 && fused_classifier_enabled() &&
                         classifier_fused(c, target.view({-1}), smoothing,
                                          need_hidden || need_weight ? grads.narrow(0, 0, rows) : torch::Tensor(),
                                          fused_loss);
      if (fused) loss.add_((fused_loss * valid).sum());
      if (fused && !need_hidden && !need_weight) continue;
      torch::Tensor g = grads.narrow(0, 0, rows);
      if (!fused) {
        torch::Tensor lp_target;  // (rows, 1)
        if (vp) {
          // log-softmax over the whole vocabulary: the max and the sum of exponentials reduced over
          // the group, and the target's log-probability from the rank that holds it.
          torch::Tensor top = std::get<0>(c.max(1, /*keepdim=*/true));
          vp->group->all_reduce(top, /*max=*/true);
          torch::Tensor total = (c - top).exp_().sum(1, /*keepdim=*/true);
          vp->group->all_reduce(total);
          torch::sub_out(lp, c, total.log_().add_(top));
          lp_target = lp.gather(1, target).masked_fill_(mine.logical_not(), 0);
          vp->group->all_reduce(lp_target);
        } else {
          at::_log_softmax_out(lp, c, 1, /*half_to_float=*/false);
          lp_target = lp.gather(1, target);
        }
        torch::Tensor row_loss = lp_target.squeeze(1).neg();
        if (smoothing > 0) {
          torch::Tensor lp_sum = lp.sum(1);
          if (vp) vp->group->all_reduce(lp_sum);
          row_loss = on_target * row_loss - smoothing * lp_sum / static_cast<double>(whole_vocab);
        }
        loss.add_((row_loss * valid).sum());
        if (!need_hidden && !need_weight) continue;
        // d loss / d z = softmax(z) - (1 - s) onehot(y) - s / V on the rows with a target, else 0
        // (rows without one are zeroed through `valid` in the products below, not here).
        // With soft-capping the gradient of c is formed in fp32 (over c, read already) and then
        // multiplied by dc/dz = 1 - t^2 before it is cast to the compute dtype.
        torch::Tensor g_capped = softcap > 0 ? c : g;
        if (smoothing > 0) {
          lp.exp_();
          torch::Tensor hit = torch::full({rows, 1}, -on_target, f32);
          if (vp) hit.masked_fill_(mine.logical_not(), 0);
          lp.scatter_add_(1, target, hit);
          lp.sub_(smoothing / static_cast<double>(whole_vocab));
          g_capped.copy_(lp);
        } else {
          // softmax cast to the compute dtype as it is stored; the target's entry, p - (1 - s),
          // is formed in fp32 first (in bf16 p rounds before the difference, which loses the
          // gradient of a confident prediction), then written over it.
          torch::exp_out(g_capped, lp);
          torch::Tensor at_target = lp_target.exp().sub_(on_target).to(g_capped.scalar_type());
          if (vp) at_target = torch::where(mine, at_target, g_capped.gather(1, target));
          g_capped.scatter_(1, target, at_target);
        }
        if (softcap > 0) {
          g_capped.mul_(z.mul_(z).neg_().add_(1));
          if (!g.is_same(g_capped)) g.copy_(g_capped);
        }
      }
      const torch::Tensor valid_col = valid.unsqueeze(1);
      if (need_hidden) {
        torch::Tensor out = grad_hidden.narrow(0, start, rows);
        if (compute == torch::kFloat32) {
          torch::mm_out(out, g, w);
        } else {
          mm_into(out, g, w);
        }
        out.mul_(valid_col);
      }
      if (need_weight) {
        const torch::Tensor h_valid = h_rows * valid_col.to(compute);
        if (compute == torch::kFloat32) {
          grad_weight.addmm_(g.t(), h_valid);
        } else {
          addmm_into(grad_weight, g.t(), h_valid);  // accumulated in place on CUDA
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
            torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(),
            torch::Tensor()};
  }
};

// Rows per chunk when the caller leaves it open: HFTRAIN_LM_HEAD_CHUNK_ROWS, or the device's
// default.
int64_t default_chunk_rows(c10::DeviceType device, int64_t vocab) {
  static const std::optional<int64_t> from_env = chunk_rows_from_env();
  if (from_env) return *from_env;
  const int64_t bytes = device == c10::DeviceType::CPU ? kCpuChunkBytes : kGpuChunkBytes;
  return std::max<int64_t>(1, bytes / (vocab * 4));
}

}  // namespace

std::optional<int64_t> chunk_rows_from_env() {
  const std::optional<std::string> v = util::Environment::process().get("HFTRAIN_LM_HEAD_CHUNK_ROWS");
  if (!v || v->empty()) return std::nullopt;
  const std::optional<int64_t> rows = util::parse_int64(*v);
  if (!rows || *rows <= 0) {
    throw util::ConfigError("environment variable HFTRAIN_LM_HEAD_CHUNK_ROWS='" + v->substr(0, 40) +
                                "' is not a positive integer",
                            "unset it, or give the rows of one chunk of the LM head's logits, e.g. 4096");
  }
  return rows;
}

torch::Tensor lm_head_loss_sum(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& labels,
                               double label_smoothing, double softcap, int64_t chunk_rows,
                               const VocabParallel* vocab_parallel) {
  TORCH_CHECK(hidden.dim() == 2 && weight.dim() == 2 && hidden.size(1) == weight.size(1) &&
                  labels.numel() == hidden.size(0),
              "lm_head_loss_sum: hidden (N, C), weight (V, C) and labels (N) do not fit");
  const int64_t vocab = weight.size(0);
  const auto device = hidden.device().type();
  // Every rank of a split vocabulary takes the same chunks (each chunk's reductions are collective):
  // rows sized by the largest slice, not this rank's.
  const int64_t sized_by =
      vocab_parallel ? vocab_slice(vocab_parallel->slice.vocab, 0, vocab_parallel->group->size()).rows() : vocab;
  if (chunk_rows <= 0) chunk_rows = default_chunk_rows(device, sized_by);
  const c10::ScalarType compute =
      at::autocast::is_autocast_enabled(device) ? at::autocast::get_autocast_dtype(device) : weight.scalar_type();
  const bool grad = torch::GradMode::is_enabled();
  return LmHeadLoss::apply(hidden, weight, labels.reshape({-1}), label_smoothing, softcap, chunk_rows,
                           grad && hidden.requires_grad(), grad && weight.requires_grad(), compute,
                           reinterpret_cast<int64_t>(vocab_parallel));
}

}  // namespace hftrain::model
