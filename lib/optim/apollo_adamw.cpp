#include "optim/apollo_adamw.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "optim/low_rank.h"
#include "optim/state_io.h"
#include "util/error.h"

namespace hftrain::optim {
namespace {

constexpr const char* kName = "apollo_adamw";
using low_rank::Side;

// apollo-torch's stable_randn: N(0, 1) float32 from a CPU generator seeded with `seed` (drawn on the
// CPU on every device, so that a run's projections do not depend on where it trains).
torch::Tensor seeded_randn(std::vector<int64_t> shape, int64_t seed) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed));
  return torch::randn(shape, gen, torch::TensorOptions().dtype(torch::kFloat32));
}

// apollo-torch's next_seed: the last of 15 draws in [0, int64 max) of a generator seeded with `seed`.
int64_t next_seed(int64_t seed) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed));
  const torch::Tensor draws = torch::randint(0, std::numeric_limits<int64_t>::max(), {15}, gen,
                                             torch::TensorOptions().dtype(torch::kInt64));
  return draws[14].item<int64_t>();
}

// The dimension channel scaling takes norms along: 1 for a tall or square matrix (a factor per
// row), 0 for a wide one (a factor per column).
int64_t norm_dim(int64_t rows, int64_t cols) { return rows < cols ? 0 : 1; }

class ApolloAdamW final : public Optimizer {
 public:
  ApolloAdamW(std::vector<ParamGroup> groups, std::vector<bool> targeted, const ApolloSettings& s)
      : Optimizer(std::move(groups)), s_(s), targeted_(std::move(targeted)) {
    size_t count = 0;
    for (const auto& g : groups_) count += g.params.size();
    if (targeted_.size() != count) {
      throw util::ConfigError("apollo_adamw: " + std::to_string(targeted_.size()) + " target flags for " +
                                  std::to_string(count) + " parameters", "");
    }
    if (s_.proj_type == config::GaloreProjection::kFull) {
      throw util::ConfigError("apollo_adamw: optimizer.apollo.proj_type=full is not a projection APOLLO has",
                              "use std, reverse_std, right or left");
    }
    size_t k = 0;
    for (const auto& g : groups_) {
      for (size_t i = 0; i < g.params.size(); ++i, ++k) {
        if (!targeted_[k]) continue;
        const torch::Tensor& p = g.params[i];
        if (p.dim() != 2) {
          throw util::ConfigError("optimizer.apollo.target_modules selects `" + g.names[i] + "`, which is not a matrix",
                                  "APOLLO projects 2-D weights only");
        }
        const Side side = low_rank::side_of(s_.proj_type, p.size(0), p.size(1));
        const bool along = (side == Side::kRight) == (norm_dim(p.size(0), p.size(1)) == 1);
        if (s_.scale_type == config::ApolloScale::kChannel && !along) {
          throw util::ConfigError(
              "optimizer.apollo.proj_type=" + std::string(low_rank::projection_name(s_.proj_type)) + " projects `" +
                  g.names[i] + "` on the side its channel factors do not run along",
              "use optimizer.apollo.proj_type=std with scale_type=channel, or scale_type=tensor");
        }
      }
    }
    state_.resize(count);
    for (size_t i = 0; i < count; ++i) state_[i].seed = static_cast<int64_t>(i) + 1;
  }

  void step() override {
    torch::NoGradGuard no_grad;
    size_t k = 0;
    for (const auto& g : groups_) {
      for (const auto& p : g.params) {
        const bool targeted = targeted_[k];
        ParamState& st = state_[k++];
        if (!p.grad().defined()) continue;
        torch::Tensor grad = p.grad();
        Side side = Side::kRight;
        if (targeted) {
          side = low_rank::side_of(s_.proj_type, p.size(0), p.size(1));
          if (!st.ortho.defined() || st.step % s_.update_proj_gap == 0) new_projection(st, p, side);
          grad = low_rank::project(grad, st.ortho, {}, side);
        }
        st.step += 1;
        double step_size = 0;
        torch::Tensor update = low_rank::adam_direction(st.exp_avg, st.exp_avg_sq, grad, st.step,
                                                        {s_.beta1, s_.beta2, s_.eps}, g.lr, &step_size);
        if (targeted) update = scaled_gradient(st, p, grad, update);
        p.add_(update, -step_size);
        if (g.weight_decay > 0.0) p.add_(p, -g.lr * g.weight_decay);
      }
    }
  }

  OptimizerState state() const override {
    OptimizerState out;
    out.meta = detail::base_meta(kName, groups_);
    size_t k = 0;
    std::vector<torch::Tensor> seeds(state_.size());
    for (const auto& st : state_) {
      if (st.step > 0 && targeted_[k]) seeds[k] = torch::full({}, st.seed, torch::kInt64);
      ++k;
    }
    k = 0;
    out.meta["steps"] = detail::export_param_states(
        groups_, state_, [&](const std::string& name, const ParamState& st) -> std::optional<int64_t> {
          const size_t index = k++;
          if (st.step == 0) return std::nullopt;
          detail::add_tensor(out, name, "exp_avg", st.exp_avg);
          detail::add_tensor(out, name, "exp_avg_sq", st.exp_avg_sq);
          detail::add_tensor(out, name, "ortho", st.ortho);
          detail::add_tensor(out, name, "seed", seeds[index]);
          detail::add_tensor(out, name, "scaled_grad_norm", st.scaled_grad_norm);
          return st.step;
        });
    out.meta["hyperparameters"] = {
        {"betas", {s_.beta1, s_.beta2}},
        {"eps", s_.eps},
        {"rank", s_.rank},
        {"update_proj_gap", s_.update_proj_gap},
        {"scale", s_.scale},
        {"scale_type", s_.scale_type == config::ApolloScale::kChannel ? "channel" : "tensor"},
        {"proj_type", low_rank::projection_name(s_.proj_type)},
        {"scale_front", s_.scale_front},
        {"norm_growth_limiter", s_.norm_growth_limiter}};
    return out;
  }

  void load_state(const OptimizerState& state) override {
    detail::StateLayout layout{
        kName, /*counts_steps=*/true, [this](size_t, size_t index, const torch::Tensor& p) {
          const auto dtype = p.scalar_type();
          if (!targeted_[index]) {
            return std::vector<detail::TensorSpec>{{"exp_avg", p.sizes().vec(), dtype},
                                                   {"exp_avg_sq", p.sizes().vec(), dtype}};
          }
          const low_rank::Shapes sh =
              low_rank::shapes_of(low_rank::side_of(s_.proj_type, p.size(0), p.size(1)), p.size(0), p.size(1), s_.rank);
          std::vector<detail::TensorSpec> specs = {{"exp_avg", sh.low, dtype},
                                                   {"exp_avg_sq", sh.low, dtype},
                                                   {"ortho", sh.ortho, dtype},
                                                   {"seed", {}, torch::kInt64}};
          if (s_.norm_growth_limiter) specs.push_back({"scaled_grad_norm", {}, dtype});
          return specs;
        }};
    std::vector<detail::LoadedParam> loaded = detail::check_and_copy(state, groups_, layout);
    std::vector<ParamState> fresh(loaded.size());
    for (size_t k = 0; k < loaded.size(); ++k) {
      ParamState& st = fresh[k];
      st.seed = static_cast<int64_t>(k) + 1;
      if (!loaded[k].has_state) continue;
      const auto& t = loaded[k].tensors;
      st.step = loaded[k].step;
      st.exp_avg = t[0];
      st.exp_avg_sq = t[1];
      if (targeted_[k]) {
        st.ortho = t[2];
        st.seed = t[3].item<int64_t>();
        if (t.size() > 4) st.scaled_grad_norm = t[4];
      }
    }
    state_ = std::move(fresh);
  }

 private:
  struct ParamState {
    int64_t step = 0;
    int64_t seed = 0;                   // the next projection's
    torch::Tensor exp_avg, exp_avg_sq;  // R's shape when targeted
    torch::Tensor ortho;                // P
    torch::Tensor scaled_grad_norm;     // the limiter's n, after the first step
  };

  void new_projection(ParamState& st, const torch::Tensor& p, Side side) const {
    const low_rank::Shapes sh = low_rank::shapes_of(side, p.size(0), p.size(1), s_.rank);
    st.ortho = (seeded_randn(sh.ortho, st.seed) / std::sqrt(static_cast<double>(s_.rank)))
                   .to(p.device(), p.scalar_type());
    st.seed = next_seed(st.seed);
  }

  // G scaled by how much Adam changed the projected gradient `low` into `direction`, limited and
  // scaled by sqrt(scale).
  torch::Tensor scaled_gradient(ParamState& st, const torch::Tensor& p, const torch::Tensor& low,
                                const torch::Tensor& direction) const {
    torch::Tensor factor;
    if (s_.scale_type == config::ApolloScale::kChannel) {
      const int64_t d = norm_dim(p.size(0), p.size(1));
      factor = torch::linalg_vector_norm(direction, 2, d) / (torch::linalg_vector_norm(low, 2, d) + 1e-8);
      if (d == 1) factor = factor.unsqueeze(1);
    } else {
      factor = torch::linalg_vector_norm(direction) / (torch::linalg_vector_norm(low) + 1e-8);
    }
    torch::Tensor scaled = p.grad() * factor;
    const double root = std::sqrt(s_.scale);
    if (s_.scale_front) scaled.mul_(root);
    if (s_.norm_growth_limiter) {
      const torch::Tensor norm = torch::linalg_vector_norm(scaled);
      if (st.scaled_grad_norm.defined()) {
        const torch::Tensor limiter = torch::clamp_min(norm / (st.scaled_grad_norm + 1e-8), 1.01) / 1.01;
        scaled = scaled / limiter;
        st.scaled_grad_norm = norm / limiter;
      } else {
        st.scaled_grad_norm = norm;
      }
    }
    if (!s_.scale_front) scaled.mul_(root);
    return scaled;
  }

  ApolloSettings s_;
  std::vector<bool> targeted_;     // per parameter, group order
  std::vector<ParamState> state_;  // per parameter, group order
};

}  // namespace

std::unique_ptr<Optimizer> make_apollo_adamw(std::vector<ParamGroup> groups, std::vector<bool> targeted,
                                             const ApolloSettings& settings) {
  return std::make_unique<ApolloAdamW>(std::move(groups), std::move(targeted), settings);
}

std::vector<bool> apollo_targets(const std::vector<std::string>& globs, const NamedParams& params) {
  return low_rank::matrix_targets(globs, params, "optimizer.apollo.target_modules",
                                  "apollo_adamw would scale nothing");
}

}  // namespace hftrain::optim
