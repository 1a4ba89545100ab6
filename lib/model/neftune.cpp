#include "model/neftune.h"

#include <cmath>

#include <torch/torch.h>

namespace hftrain::model {

torch::Tensor add_neftune_noise(const torch::Tensor& embeddings, double alpha, int64_t seq_len, int64_t offset) {
  std::vector<int64_t> shape = embeddings.sizes().vec();
  shape[1] = seq_len;
  const double magnitude = alpha / std::sqrt(static_cast<double>(seq_len * embeddings.size(-1)));
  torch::Tensor noise;
  {
    torch::NoGradGuard no_grad;
    noise = torch::zeros(shape, embeddings.options().requires_grad(false)).uniform_(-magnitude, magnitude);
  }
  if (seq_len != embeddings.size(1)) noise = noise.narrow(1, offset, embeddings.size(1));
  return embeddings + noise;
}

}  // namespace hftrain::model
