#include "optim/adafactor.h"

#include <cmath>

#include <torch/torch.h>

#include "optim/state_io.h"

namespace hftrain::optim {
namespace {

torch::Tensor rms(const torch::Tensor& t) {
  return t.norm(2) / std::sqrt(static_cast<double>(t.numel()));
}

struct AdafactorState {
  int64_t step = 0;              // 0: no state yet (the tensors below are undefined)
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

  OptimizerState state() const override {
    OptimizerState out;
    out.meta = detail::base_meta("adafactor", groups_);
    out.meta["steps"] = detail::export_param_states(
        groups_, state_, [&](const std::string& name, const auto& st) -> std::optional<int64_t> {
          if (st.step == 0) return std::nullopt;
          detail::add_tensor(out, name, "exp_avg", st.exp_avg);
          detail::add_tensor(out, name, "exp_avg_sq_row", st.exp_avg_sq_row);
          detail::add_tensor(out, name, "exp_avg_sq_col", st.exp_avg_sq_col);
          detail::add_tensor(out, name, "exp_avg_sq", st.exp_avg_sq);
          return st.step;
        });
    out.meta["hyperparameters"] = {
        {"beta1", config_.beta1 ? nlohmann::json(*config_.beta1) : nlohmann::json()},
        {"decay_rate", config_.decay_rate},
        {"clip_threshold", config_.clip_threshold},
        {"eps1", config_.eps1},
        {"eps2", config_.eps2},
        {"scale_parameter", config_.scale_parameter}};
    return out;
  }

  void load_state(const OptimizerState& state) override {
    detail::StateLayout layout{"adafactor", /*counts_steps=*/true,
                               [&](size_t, size_t, const torch::Tensor& p) { return specs(p); }};
    std::vector<detail::LoadedParam> loaded = detail::check_and_copy(state, groups_, layout);
    std::vector<AdafactorState> fresh(loaded.size());
    for (size_t k = 0; k < loaded.size(); ++k) {
      auto& in = loaded[k];
      if (!in.has_state) continue;
      auto& st = fresh[k];
      st.step = in.step;
      size_t t = 0;
      if (config_.beta1) st.exp_avg = in.tensors[t++];
      if (in.tensors.size() - t == 2) {
        st.exp_avg_sq_row = in.tensors[t++];
        st.exp_avg_sq_col = in.tensors[t++];
      } else {
        st.exp_avg_sq = in.tensors[t++];
      }
    }
    state_ = std::move(fresh);
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

  // The state tensors of `p`, in the order load_state() reads them; the same shapes and dtypes as
  // update() allocates.
  std::vector<detail::TensorSpec> specs(const torch::Tensor& p) const {
    const auto dtype = low_precision(p) ? torch::kFloat32 : p.scalar_type();
    const std::vector<int64_t> shape = p.sizes().vec();
    std::vector<detail::TensorSpec> s;
    if (config_.beta1) s.push_back({"exp_avg", shape, dtype});
    if (p.dim() >= 2) {
      std::vector<int64_t> col(shape.begin(), shape.end() - 2);
      col.push_back(shape.back());
      s.push_back({"exp_avg_sq_row", std::vector<int64_t>(shape.begin(), shape.end() - 1), dtype});
      s.push_back({"exp_avg_sq_col", col, dtype});
    } else {
      s.push_back({"exp_avg_sq", shape, dtype});
    }
    return s;
  }

  static bool low_precision(const torch::Tensor& p) {
    return p.scalar_type() != torch::kFloat32 && p.scalar_type() != torch::kFloat64;
  }

  void update(torch::Tensor& p, AdafactorState& st, double lr, double weight_decay) {
    // Low-precision parameters are updated through an fp32 copy, as transformers does.
    const bool low = low_precision(p);
    torch::Tensor grad = low ? p.grad().to(torch::kFloat32) : p.grad();
    torch::Tensor param = low ? p.to(torch::kFloat32) : p;
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
    if (low) p.copy_(param);
  }

  config::AdafactorConfig config_;
  std::vector<AdafactorState> state_;  // one per parameter, in group order
};

}  // namespace

std::unique_ptr<Optimizer> make_adafactor(std::vector<ParamGroup> groups, const config::AdafactorConfig& config) {
  return std::make_unique<Adafactor>(std::move(groups), config);
}

}  // namespace hftrain::optim
