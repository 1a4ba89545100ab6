#include "optim/adafactor.h"

#include <cmath>

#include <torch/torch.h>

namespace hftrain::optim {
namespace {

torch::Tensor rms(const torch::Tensor& t) {
  return t.norm(2) / std::sqrt(static_cast<double>(t.numel()));
}

struct AdafactorState {
  int64_t step = 0;
  torch::Tensor exp_avg;         // first moment, when beta1 is set
  torch::Tensor exp_avg_sq_row;  // factored second moment: (..., rows)
  torch::Tensor exp_avg_sq_col;  // (..., cols)
  torch::Tensor exp_avg_sq;      // unfactored second moment (vectors)
};

class Adafactor : public Optimizer {
 public:
  Adafactor(std::vector<ParamGroup> groups, const config::AdafactorConfig& config)
      : Optimizer(std::move(groups)), config_(config) {
    for (const auto& g : groups_) state_.resize(state_.size() + g.params.size());
  }

  void step() override {
    torch::NoGradGuard no_grad;
    size_t k = 0;
    for (auto& g : groups_) {
      for (auto& p : g.params) {
        auto& st = state_[k++];
        if (p.grad().defined()) update(p, st, g.lr, g.weight_decay);
      }
    }
  }

 private:
  // The second-moment estimate of a factored parameter: outer product of row and column means.
  static torch::Tensor approx_sq_grad(const torch::Tensor& row, const torch::Tensor& col) {
    auto r_factor = (row / row.mean(-1, /*keepdim=*/true)).rsqrt_().unsqueeze(-1);
    auto c_factor = col.unsqueeze(-2).rsqrt();
    return r_factor * c_factor;
  }

  void update(torch::Tensor& p, AdafactorState& st, double lr, double weight_decay) {
    // Low-precision parameters are updated through an fp32 copy, as transformers does.
    const bool low_precision = p.scalar_type() != torch::kFloat32 && p.scalar_type() != torch::kFloat64;
    torch::Tensor grad = low_precision ? p.grad().to(torch::kFloat32) : p.grad();
    torch::Tensor param = low_precision ? p.to(torch::kFloat32) : p;
    const bool factored = grad.dim() >= 2;
    const bool first_moment = config_.beta1.has_value();
    if (st.step == 0) {
      if (first_moment) st.exp_avg = torch::zeros_like(grad);
      if (factored) {
        st.exp_avg_sq_row = torch::zeros(grad.sizes().slice(0, grad.dim() - 1), grad.options());
        std::vector<int64_t> col_shape(grad.sizes().begin(), grad.sizes().end() - 2);
        col_shape.push_back(grad.size(-1));
        st.exp_avg_sq_col = torch::zeros(col_shape, grad.options());
      } else {
        st.exp_avg_sq = torch::zeros_like(grad);
      }
    }
    ++st.step;
    double step_lr = lr;
    if (config_.scale_parameter) step_lr *= std::max(config_.eps2, rms(param).item<double>());
    const double beta2t = 1.0 - std::pow(static_cast<double>(st.step), config_.decay_rate);

    torch::Tensor upd = grad.pow(2) + config_.eps1;
    if (factored) {
      st.exp_avg_sq_row.mul_(beta2t).add_(upd.mean(-1), 1.0 - beta2t);
      st.exp_avg_sq_col.mul_(beta2t).add_(upd.mean(-2), 1.0 - beta2t);
      upd = approx_sq_grad(st.exp_avg_sq_row, st.exp_avg_sq_col).mul_(grad);
    } else {
      st.exp_avg_sq.mul_(beta2t).add_(upd, 1.0 - beta2t);
      upd = st.exp_avg_sq.rsqrt().mul_(grad);
    }
    upd.div_((rms(upd) / config_.clip_threshold).clamp_min_(1.0));
    upd.mul_(step_lr);
    if (first_moment) {
      st.exp_avg.mul_(*config_.beta1).add_(upd, 1.0 - *config_.beta1);
      upd = st.exp_avg;
    }
    if (weight_decay != 0) param.add_(param, -weight_decay * step_lr);
    param.add_(-upd);
    if (low_precision) p.copy_(param);
  }

  config::AdafactorConfig config_;
  std::vector<AdafactorState> state_;  // one per parameter, in group order
};

}  // namespace

std::unique_ptr<Optimizer> make_adafactor(std::vector<ParamGroup> groups, const config::AdafactorConfig& config) {
  return std::make_unique<Adafactor>(std::move(groups), config);
}

}  // namespace hftrain::optim
