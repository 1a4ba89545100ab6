#include "parallel/plan/activation_plan.h"

#include <algorithm>

#include "parallel/plan/memory_plan.h"

namespace hftrain::parallel {

ActivationEstimate estimate_activations(const ActivationShape& s) {
  const double tokens = static_cast<double>(s.batch * s.seq_len);
  const double e = static_cast<double>(s.element_bytes);
  const double c = static_cast<double>(s.d_model);
  const double q = static_cast<double>(s.n_head * s.head_dim);
  const double kv = static_cast<double>(s.n_kv_head * s.head_dim);
  const double ff = static_cast<double>(s.d_ff);
  // Per token: the residual stream into each norm and each norm's output (4C), q/k/v (q + 2kv) and
  // the attention output (q); RoPE keeps q and k before rotation (q + kv); the MLP keeps its
  // up-projection and activation (GELU: 2 d_ff; SwiGLU: gate and up, silu(gate), their product).
  // Under tensor parallelism the heads' and the MLP's tensors are split (1 / tp each), the residual
  // stream's only with sequence parallelism.
  const double tp = static_cast<double>(std::max<int64_t>(1, s.tensor_parallel));
  const double stream = s.sequence_parallel ? tp : 1;
  double per_token = 4 * c / stream + ((q + 2 * kv) + q + (s.rope ? q + kv : 0) + (s.gated_mlp ? 4 * ff : 2 * ff)) / tp;
  double per_block = per_token * tokens * e;
  if (s.dropout > 0) {
    // Dropout masks on the attention and MLP outputs (one byte each), and the math kernel's
    // probabilities with their mask (CPU).
    per_block += 2 * c * tokens / stream;
    per_block += static_cast<double>(s.batch * s.n_head) * static_cast<double>(s.seq_len * s.seq_len) * (e + 1) / tp;
  }
  ActivationEstimate out;
  out.per_block = per_block;
  const double layers = static_cast<double>(s.n_layer);
  out.blocks = s.checkpointing ? layers * c * tokens * 4 / stream + per_block : layers * per_block;
  // The head keeps the final norm's input and output; the loss holds one chunk of fp32 logits
  // (about 32 MB, lm_head_loss.h; a rank's slice of the vocabulary under tensor parallelism) and
  // the gradient of the hidden states.
  const double chunk = std::min(tokens * static_cast<double>(s.vocab) / tp * 4, 32.0 * 1024 * 1024);
  out.head = 2 * c * tokens * 4 + chunk;
  if (s.document_mask && !s.variable_length) {
    out.mask = static_cast<double>(s.batch) * static_cast<double>(s.seq_len * s.seq_len) * (1 + e);
  }
  return out;
}

std::string activation_summary(const ActivationShape& s) {
  const ActivationEstimate a = estimate_activations(s);
  std::string out = "activations per micro-batch of " + std::to_string(s.batch) + " x " + std::to_string(s.seq_len) +
                    " tokens (per rank" +
                    (s.tensor_parallel > 1 ? ", tensor parallel " + std::to_string(s.tensor_parallel) +
                                                 (s.sequence_parallel ? " with sequence parallelism" : "")
                                           : std::string()) +
                    ", estimate): " + format_bytes(a.total()) + " = blocks " + format_bytes(a.blocks);
  out += s.checkpointing
             ? " (activation checkpointing: block inputs plus one block of " + format_bytes(a.per_block) + ")"
             : " (" + format_bytes(a.per_block) + " per block)";
  out += " + output layer and loss " + format_bytes(a.head);
  if (s.document_mask) {
    out += s.variable_length ? " (document masking: variable-length flash attention, no mask)"
                             : " + document mask " + format_bytes(a.mask);
  }
  out += "\n";
  if (s.dropout > 0) {
    out +=
        "  dropout > 0: on the CPU attention runs the math kernel, which keeps B x H x T x T probabilities per block\n";
  }
  return out;
}

}  // namespace hftrain::parallel
