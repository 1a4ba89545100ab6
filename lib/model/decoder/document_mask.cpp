#include "model/decoder/document_mask.h"

#include <torch/torch.h>

#include <cstdlib>
#include <cstring>

namespace hftrain::model {

torch::Tensor document_causal_mask(const torch::Tensor& position_ids) {
  const int64_t T = position_ids.size(1);
  // Documents are numbered by counting the starts (position 0) up to each token.
  const torch::Tensor doc = position_ids.eq(0).cumsum(1);  // (B, T)
  const torch::Tensor same = doc.unsqueeze(2).eq(doc.unsqueeze(1));  // (B, T, T)
  const torch::Tensor causal = torch::ones({T, T}, position_ids.options().dtype(torch::kBool)).tril();
  return same.logical_and_(causal).unsqueeze(1);
}

torch::Tensor sliding_window_causal_mask(int64_t length, int64_t window, const torch::Device& device) {
  return torch::ones({length, length}, torch::TensorOptions().dtype(torch::kBool).device(device))
      .tril()
      .triu(-(window - 1));
}

DocumentLayout document_layout(const torch::Tensor& position_ids) {
  const int64_t total = position_ids.numel();
  // A document starts at every position 0; packed rows always begin with one (data/packing.h),
  // so the flattened rows never join two documents. nonzero() reads the device: the loader's
  // batches carry these starts found on the host (data::Batch::document_offsets) instead.
  const torch::Tensor starts = position_ids.reshape({-1}).eq(0).nonzero().view({-1});
  const torch::Tensor end = torch::full({1}, total, starts.options());
  return DocumentLayout{torch::cat({starts, end}).to(torch::kInt32), position_ids.size(1)};
}

bool variable_length_attention(const torch::Device& device, torch::ScalarType dtype, int64_t head_dim) {
  if (!device.is_cuda()) return false;
  if (dtype != torch::kHalf && dtype != torch::kBFloat16) return false;
  if (head_dim % 8 != 0 || head_dim > 256) return false;
  const char* env = std::getenv("HFTRAIN_VARLEN_ATTENTION");
  return !(env && std::strcmp(env, "0") == 0);
}

}  // namespace hftrain::model
