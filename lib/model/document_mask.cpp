#include "model/document_mask.h"

#include <torch/torch.h>

namespace hftrain::model {

torch::Tensor document_causal_mask(const torch::Tensor& position_ids) {
  const int64_t T = position_ids.size(1);
  // Documents are numbered by counting the starts (position 0) up to each token.
  const torch::Tensor doc = position_ids.eq(0).cumsum(1);  // (B, T)
  const torch::Tensor same = doc.unsqueeze(2).eq(doc.unsqueeze(1));  // (B, T, T)
  const torch::Tensor causal = torch::ones({T, T}, position_ids.options().dtype(torch::kBool)).tril();
  return same.logical_and_(causal).unsqueeze(1);
}

}  // namespace hftrain::model
