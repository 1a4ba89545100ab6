// The output layer and the next-token cross-entropy in one pass over row chunks, so that the
// (tokens x vocabulary) logits are never held whole: at GPT-2's vocabulary of 50257 and 2048
// tokens a step, the logits, their log-softmax and their gradient are 412 MB each, and on the
// CPU allocating and zeroing them cost a fifth of a small model's step (../shared/PERF-NOTES.md).
//
// Forward takes each chunk's logits (one matmul), their log-sum-exp and the loss, and, when a
// backward will follow, the gradient of the chunk's logits (softmax minus the smoothed one-hot)
// right away, which it multiplies into the gradients of the hidden states and of the weight. The
// logits buffer of a chunk is reused for the next. Backward only scales those two gradients by the
// incoming one. The FLOPs are those of the plain layer (no recomputation); memory holds one chunk
// of logits plus a gradient the size of the weight. Under autocast the matmuls run in the autocast
// dtype and the softmax in fp32, as F.linear + cross_entropy under autocast do.
#pragma once

#include <cstdint>
#include <optional>

#include <torch/types.h>

#include "model/decoder/tensor_parallel.h"

namespace hftrain::model {

// Sum over targets of cross_entropy(hidden @ weight^T, labels, ignore_index=-100,
// label_smoothing), in fp32. hidden (N, C); weight (V, C); labels (N) int64. `softcap` > 0 caps
// the logits first, as Gemma 2 does: softcap * tanh(logits / softcap). `chunk_rows` 0
// picks rows so that a chunk of fp32 logits is about 32 MiB on the CPU and 1 GiB on a GPU, or
// HFTRAIN_LM_HEAD_CHUNK_ROWS rows when that is set. With `vocab_parallel`, `weight` holds this
// rank's rows of the vocabulary (tensor_parallel.h) and every rank of the group gets the whole
// loss; the gradient of `hidden` is this rank's part (tp_enter before it sums the parts).
torch::Tensor lm_head_loss_sum(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& labels,
                               double label_smoothing, double softcap = 0, int64_t chunk_rows = 0,
                               const VocabParallel* vocab_parallel = nullptr);

// HFTRAIN_LM_HEAD_CHUNK_ROWS read and checked: nullopt when unset or empty. Throws
// util::ConfigError naming the variable when it is not a positive integer. The trainer calls it
// while it builds the run, so that a bad value stops the run before its first step.
std::optional<int64_t> chunk_rows_from_env();

}  // namespace hftrain::model
