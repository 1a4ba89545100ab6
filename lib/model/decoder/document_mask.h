// Attention within packed documents. A packed row holds several documents; its position ids
// restart at 0 where each one starts (data/packing.h). Attention then stays inside a document:
// query i sees key j only when j <= i and both lie in the same document.
//
// Two forms of the same rule, both built once per batch and shared by every layer:
// - a block-diagonal causal mask for SDPA (the CPU, and CUDA where flash attention cannot run);
// - on CUDA in half or bfloat16, the documents' cumulative lengths for ATen's variable-length
//   flash attention, which needs no (T, T) mask at all: the batch becomes one sequence of B x T
//   tokens cut into documents.
#pragma once

#include <cstdint>

#include <torch/types.h>

namespace hftrain::model {

// (B, T) int64 positions -> (B, 1, T, T) bool, true where attention is allowed.
torch::Tensor document_causal_mask(const torch::Tensor& position_ids);

// (T, T) bool: causal attention over the last `window` positions, the query's own included
// (transformers' sliding window: key j is seen from query i when i - window < j <= i).
torch::Tensor sliding_window_causal_mask(int64_t length, int64_t window, const torch::Device& device);

// The documents of a packed batch as flash attention's variable-length input: cu_seqlens holds
// the int32 offsets of every document in the flattened (B x T) tokens, then B x T; max_seqlen
// bounds a document's length (T: every row starts a document, so none is longer).
struct DocumentLayout {
  torch::Tensor cu_seqlens;
  int64_t max_seqlen = 0;
};
DocumentLayout document_layout(const torch::Tensor& position_ids);

// Whether attention over packed documents runs as variable-length flash attention: a CUDA device,
// activations in half or bfloat16 (flash's dtypes), a head size flash takes (a multiple of 8, at
// most 256), and HFTRAIN_VARLEN_ATTENTION not set to 0 (which keeps the masked SDPA, for
// comparison).
bool variable_length_attention(const torch::Device& device, torch::ScalarType dtype, int64_t head_dim);

}  // namespace hftrain::model
