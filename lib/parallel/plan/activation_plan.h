// The activations one micro-batch of a decoder keeps for its backward pass, by counting the
// tensors each block saves (per token: the norms' inputs and outputs, q/k/v and the attention
// output, the MLP's hidden activations; RoPE's rotated inputs for llama), for `hftrain plan`.
// Attention itself goes through a fused kernel (flash on the CPU, flash or memory-efficient on
// CUDA) that keeps no T x T matrix, except:
//  - dropout > 0 on the CPU runs the math kernel, which keeps the B x H x T x T probabilities and
//    their dropout mask per block;
//  - document masking (data.document_mask) keeps one B x T x T boolean mask for the whole pass,
//    plus its conversion to an additive bias of the compute dtype where the kernel needs one;
//    on CUDA in bf16/fp16 it runs as variable-length flash attention instead, which keeps only
//    the documents' offsets (model/decoder/document_mask.h).
// Activation checkpointing keeps each block's input and recomputes one block at a time.
// An estimate (it leaves out small buffers such as the kernels' log-sum-exp), in bytes.
#pragma once

#include <cstdint>
#include <string>

namespace hftrain::parallel {

struct ActivationShape {
  int64_t batch = 0;    // micro-batch rows B
  int64_t seq_len = 0;  // T
  int64_t n_layer = 0, d_model = 0, n_head = 0, n_kv_head = 0, head_dim = 0, d_ff = 0, vocab = 0;
  bool gated_mlp = false;  // llama's SwiGLU (else GPT-2's GELU MLP)
  bool rope = false;
  double dropout = 0;
  int64_t element_bytes = 4;  // 4 in fp32, 2 under bf16/fp16 autocast
  bool checkpointing = false;
  bool document_mask = false;
  bool variable_length = false;  // document masking through CUDA's variable-length flash attention
  // Tensor parallelism: a rank keeps its heads' and its d_ff units' tensors (1 / tp of them) and
  // its slice of the logits; with sequence parallelism also 1 / tp of the residual stream's.
  int64_t tensor_parallel = 1;
  bool sequence_parallel = false;
};

struct ActivationEstimate {
  double per_block = 0;  // what one block keeps
  double blocks = 0;     // all blocks (with checkpointing: their inputs plus one block)
  double head = 0;       // final norm, output layer and loss (one chunk of logits)
  double mask = 0;       // document masking
  double total() const { return blocks + head + mask; }
};

ActivationEstimate estimate_activations(const ActivationShape& shape);

// The lines `hftrain plan` prints under the table.
std::string activation_summary(const ActivationShape& shape);

}  // namespace hftrain::parallel
