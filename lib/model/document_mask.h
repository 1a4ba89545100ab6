// Attention within packed documents. A packed row holds several documents; its position ids
// restart at 0 where each one starts (data/packing.h). Attention then stays inside a document:
// query i sees key j only when j <= i and both lie in the same document, a block-diagonal causal
// mask. The mask is built once per batch and shared by every layer.
#pragma once

#include <torch/types.h>

namespace hftrain::model {

// (B, T) int64 positions -> (B, 1, T, T) bool, true where attention is allowed.
torch::Tensor document_causal_mask(const torch::Tensor& position_ids);

}  // namespace hftrain::model
