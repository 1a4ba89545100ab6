#include "train/step/master_weights.h"

#include <set>

#include <torch/torch.h>

#include "util/error.h"

namespace hftrain::train {

MasterWeights::MasterWeights(std::vector<torch::Tensor> params, const std::vector<torch::Tensor>& frozen,
                             bool fp32_accumulation)
    : fp32_accumulation_(fp32_accumulation) {
  torch::NoGradGuard no_grad;
  std::set<const void*> seen;  // a tied weight is listed under each of its names, kept once
  for (auto& p : params) {
    if (seen.insert(p.unsafeGetTensorImpl()).second) params_.push_back(std::move(p));
  }
  for (const auto& p : params_) {
    if (p.scalar_type() != torch::kFloat32) {
      throw util::ConfigError("trainer.param_dtype=bf16 found a trained parameter stored as " +
                                  std::string(c10::toString(p.scalar_type())) + ", not fp32",
                              "start from fp32 weights (model.from converts what it reads), or param_dtype=fp32");
    }
    masters_.push_back(p.detach());
    copies_.push_back(p.detach().to(torch::kBFloat16));
    sums_.emplace_back();
  }
  for (const auto& f : frozen) {
    if (seen.insert(f.unsafeGetTensorImpl()).second && torch::isFloatingType(f.scalar_type())) {
      torch::Tensor(f).set_data(f.detach().to(torch::kBFloat16));
    }
  }
  for (size_t i = 0; i < params_.size(); ++i) params_[i].set_data(copies_[i]);
}

std::string MasterWeights::memory_clause() const {
  return "; fp32 master weights " + std::to_string(numel() * 4) +
         " B (the formula counts them with the optimizer state)";
}

int64_t MasterWeights::numel() const {
  int64_t n = 0;
  for (const auto& m : masters_) n += m.numel();
  return n;
}

void MasterWeights::accumulate() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    torch::Tensor& g = params_[i].mutable_grad();
    if (!g.defined()) continue;
    if (sums_[i].defined()) {
      sums_[i].add_(g);
    } else {
      sums_[i] = g.to(torch::kFloat32);
    }
    g = torch::Tensor();
  }
}

void MasterWeights::to_masters() {
  torch::NoGradGuard no_grad;
  // The fp32 gradients of those without an accumulator: views of one flat buffer, filled by one
  // multi-tensor copy (a kernel launch or two, not one per parameter).
  std::vector<size_t> fresh;
  std::vector<bool> is_fresh(params_.size(), false);
  int64_t fresh_numel = 0;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].grad().defined() && !sums_[i].defined()) {
      fresh.push_back(i);
      is_fresh[i] = true;
      fresh_numel += params_[i].numel();
    }
  }
  if (!fresh.empty()) {
    const torch::Tensor flat = torch::empty({fresh_numel}, masters_[fresh.front()].options());
    std::vector<torch::Tensor> dst, src;
    int64_t offset = 0;
    for (size_t i : fresh) {
      sums_[i] = flat.narrow(0, offset, params_[i].numel()).view(params_[i].sizes());
      offset += params_[i].numel();
      dst.push_back(sums_[i]);
      src.push_back(params_[i].grad());
    }
    torch::_foreach_copy_(dst, src);
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor g = params_[i].grad();
    torch::Tensor sum = std::move(sums_[i]);
    sums_[i] = torch::Tensor();
    // An accumulator from earlier micro-batches takes the last one's gradient; a fresh view holds it.
    if (g.defined() && sum.defined() && !is_fresh[i]) sum.add_(g);
    params_[i].set_data(masters_[i]);
    params_[i].mutable_grad() = sum;
  }
  holds_masters_ = true;
}

void MasterWeights::to_bf16() {
  torch::NoGradGuard no_grad;
  if (!copies_.empty()) torch::_foreach_copy_(copies_, masters_);  // rounded to nearest even, one multi-tensor kernel
  for (size_t i = 0; i < params_.size(); ++i) params_[i].set_data(copies_[i]);
  holds_masters_ = false;
}

MasterWeights::Scope::Scope(MasterWeights* masters) : masters_(masters) {
  if (!masters_ || masters_->holds_masters_) return;
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < masters_->params_.size(); ++i) masters_->params_[i].set_data(masters_->masters_[i]);
  masters_->holds_masters_ = true;
  switched_ = true;
}

MasterWeights::Scope::~Scope() {
  if (switched_) masters_->to_bf16();
}

}  // namespace hftrain::train
