#include "optim/galore_adamw.h"

#include <algorithm>
#include <optional>
#include <string>

#include <torch/torch.h>

#include "optim/low_rank.h"
#include "optim/state_io.h"
#include "util/error.h"

namespace hftrain::optim {
namespace {

constexpr const char* kName = "galore_adamw";
using config::GaloreProjection;

using low_rank::Side;
using low_rank::projection_name;
using low_rank::shapes_of;
using low_rank::side_of;

class GaloreAdamW final : public Optimizer {
 public:
  GaloreAdamW(std::vector<ParamGroup> groups, std::vector<bool> projected, const GaloreSettings& s)
      : Optimizer(std::move(groups)), s_(s), projected_(std::move(projected)) {
    size_t count = 0;
    for (const auto& g : groups_) count += g.params.size();
    if (projected_.size() != count) {
      throw util::ConfigError("galore_adamw: " + std::to_string(projected_.size()) + " projection flags for " +
                                  std::to_string(count) + " parameters", "");
    }
    size_t k = 0;
    for (const auto& g : groups_) {
      for (size_t i = 0; i < g.params.size(); ++i, ++k) {
        if (projected_[k] && g.params[i].dim() != 2) {
          throw util::ConfigError("optimizer.galore.target_modules selects `" + g.names[i] + "`, which is not a matrix",
                                  "GaLore projects 2-D weights only");
        }
      }
    }
    state_.resize(count);
  }

  void step() override {
    torch::NoGradGuard no_grad;
    size_t k = 0;
    for (const auto& g : groups_) {
      for (const auto& p : g.params) {
        const bool projected = projected_[k];
        ParamState& st = state_[k++];
        if (!p.grad().defined()) continue;
        torch::Tensor grad = p.grad();
        Side side = Side::kRight;
        if (projected) {
          side = side_of(s_.proj_type, p.size(0), p.size(1));
          if (!st.ortho.defined() || st.step % s_.update_proj_gap == 0) new_projection(st, grad, side);
          grad = low_rank::project(grad, st.ortho, st.ortho_right, side);
        }
        st.step += 1;
        double step_size = 0;
        torch::Tensor update = low_rank::adam_direction(st.exp_avg, st.exp_avg_sq, grad, st.step,
                                                        {s_.beta1, s_.beta2, s_.eps}, g.lr, &step_size);
        if (projected) update = low_rank::project_back(update, st.ortho, st.ortho_right, side) * s_.scale;
        p.add_(update, -step_size);
        if (g.weight_decay > 0.0) p.add_(p, -g.lr * g.weight_decay);
      }
    }
  }

  OptimizerState state() const override {
    OptimizerState out;
    out.meta = detail::base_meta(kName, groups_);
    out.meta["steps"] = detail::export_param_states(
        groups_, state_, [&](const std::string& name, const ParamState& st) -> std::optional<int64_t> {
          if (st.step == 0) return std::nullopt;
          detail::add_tensor(out, name, "exp_avg", st.exp_avg);
          detail::add_tensor(out, name, "exp_avg_sq", st.exp_avg_sq);
          detail::add_tensor(out, name, "ortho", st.ortho);
          detail::add_tensor(out, name, "ortho_right", st.ortho_right);
          return st.step;
        });
    out.meta["hyperparameters"] = {{"betas", {s_.beta1, s_.beta2}},
                                   {"eps", s_.eps},
                                   {"rank", s_.rank},
                                   {"update_proj_gap", s_.update_proj_gap},
                                   {"scale", s_.scale},
                                   {"proj_type", projection_name(s_.proj_type)}};
    return out;
  }

  void load_state(const OptimizerState& state) override {
    detail::StateLayout layout{kName, /*counts_steps=*/true, [this](size_t, size_t index, const torch::Tensor& p) {
                                 const auto dtype = p.scalar_type();
                                 if (!projected_[index]) {
                                   return std::vector<detail::TensorSpec>{{"exp_avg", p.sizes().vec(), dtype},
                                                                          {"exp_avg_sq", p.sizes().vec(), dtype}};
                                 }
                                 const Side side = side_of(s_.proj_type, p.size(0), p.size(1));
                                 const low_rank::Shapes sh =
                                     shapes_of(side, p.size(0), p.size(1), std::min({s_.rank, p.size(0), p.size(1)}));
                                 std::vector<detail::TensorSpec> specs = {{"exp_avg", sh.low, dtype},
                                                                          {"exp_avg_sq", sh.low, dtype},
                                                                          {"ortho", sh.ortho, dtype}};
                                 if (side == Side::kBoth) specs.push_back({"ortho_right", sh.ortho_right, dtype});
                                 return specs;
                               }};
    std::vector<detail::LoadedParam> loaded = detail::check_and_copy(state, groups_, layout);
    std::vector<ParamState> fresh(loaded.size());
    for (size_t k = 0; k < loaded.size(); ++k) {
      if (!loaded[k].has_state) continue;
      ParamState& st = fresh[k];
      st.step = loaded[k].step;
      st.exp_avg = loaded[k].tensors[0];
      st.exp_avg_sq = loaded[k].tensors[1];
      if (loaded[k].tensors.size() > 2) st.ortho = loaded[k].tensors[2];
      if (loaded[k].tensors.size() > 3) st.ortho_right = loaded[k].tensors[3];
    }
    state_ = std::move(fresh);
  }

 private:
  struct ParamState {
    int64_t step = 0;
    torch::Tensor exp_avg, exp_avg_sq;  // R's shape when projected
    torch::Tensor ortho;                // P (right, left) or P_l (full)
    torch::Tensor ortho_right;          // P_r (full)
  };

  // The projections are kept contiguous: the SVD's U and Vh come column-major, so their first k
  // columns or rows are strided views, and BLAS sums a strided operand in another order than the
  // contiguous copy a resume loads (1-ulp differences after a resume). Contiguous both times, a
  // resumed run makes the same products bit for bit; galore_torch keeps the views, so the fixture
  // test compares within a tolerance.
  void new_projection(ParamState& st, const torch::Tensor& grad, Side side) const {
    const auto [u, s, vh] = torch::linalg_svd(grad.to(torch::kFloat32), /*full_matrices=*/false);
    const int64_t k = std::min(s_.rank, s.size(0));
    const auto dtype = grad.scalar_type();
    switch (side) {
      case Side::kRight: st.ortho = vh.slice(0, 0, k).to(dtype).contiguous(); break;
      case Side::kLeft: st.ortho = u.slice(1, 0, k).to(dtype).contiguous(); break;
      case Side::kBoth:
        st.ortho = u.slice(1, 0, k).to(dtype).contiguous();
        st.ortho_right = vh.slice(0, 0, k).to(dtype).contiguous();
        break;
    }
  }
  GaloreSettings s_;
  std::vector<bool> projected_;   // per parameter, group order
  std::vector<ParamState> state_;  // per parameter, group order
};

}  // namespace

std::unique_ptr<Optimizer> make_galore_adamw(std::vector<ParamGroup> groups, std::vector<bool> projected,
                                             const GaloreSettings& settings) {
  return std::make_unique<GaloreAdamW>(std::move(groups), std::move(projected), settings);
}

std::vector<bool> galore_targets(const std::vector<std::string>& globs, const NamedParams& params) {
  return low_rank::matrix_targets(globs, params, "optimizer.galore.target_modules",
                                  "galore_adamw would project nothing");
}

}  // namespace hftrain::optim
