#include "optim/muon.h"

#include <fnmatch.h>

#include <cmath>
#include <utility>

#include <torch/torch.h>

#include "optim/fused_adamw.h"
#include "optim/state_io.h"
#include "util/error.h"

namespace hftrain::optim {
namespace {

constexpr const char* kName = "muon";
// Keller Jordan's quintic coefficients (torch.optim.Muon's defaults).
constexpr double kA = 3.4445, kB = -4.7750, kC = 2.0315;

double adjusted_lr(double lr, config::MuonAdjustLr how, int64_t rows, int64_t cols) {
  const auto a = static_cast<double>(rows), b = static_cast<double>(cols);
  if (how == config::MuonAdjustLr::kMatchRmsAdamw) return lr * 0.2 * std::sqrt(std::max(a, b));
  return lr * std::sqrt(std::max(1.0, a / b));
}

class Muon : public Optimizer {
 public:
  Muon(std::vector<ParamGroup> groups, const MuonMatrices& matrices, const MuonSettings& s)
      : Optimizer(std::move(groups)), s_(s) {
    std::vector<ParamGroup> adam_groups;
    size_t found = 0;
    for (const auto& g : groups_) {
      ParamGroup a = g;
      a.names.clear(), a.params.clear(), a.whole_numels.clear();
      for (size_t i = 0; i < g.params.size(); ++i) {
        auto it = matrices.find(g.names[i]);
        slots_.push_back({});
        Slot& slot = slots_.back();
        if (it == matrices.end()) {
          a.names.push_back(g.names[i]);
          a.params.push_back(g.params[i]);
          if (!g.whole_numels.empty()) a.whole_numels.push_back(g.whole_numels[i]);
          continue;
        }
        ++found;
        slot.muon = true;
        slot.matrix = it->second;
        check_matrix(g.names[i], g.params[i], slot.matrix);
      }
      adam_groups.push_back(std::move(a));
    }
    if (found != matrices.size()) {
      throw util::ConfigError("muon: " + std::to_string(matrices.size() - found) +
                                  " of the matrices to orthogonalise are not among the optimizer's parameters",
                              "name parameters of the model in optimizer.muon.params");
    }
    adamw_ = make_fused_adamw(std::move(adam_groups), {.beta1 = s.beta1, .beta2 = s.beta2, .eps = s.adam_eps});
  }

  void step() override {
    torch::NoGradGuard no_grad;
    // The AdamW part at the same schedule: every group's lr is its base lr times one factor.
    for (const auto& g : groups_) {
      if (g.base_lr != 0) {
        adamw_->set_lr_factor(g.lr / g.base_lr);
        break;
      }
    }
    adamw_->step();
    size_t k = 0;
    for (auto& g : groups_) {
      for (auto& p : g.params) {
        Slot& slot = slots_[k++];
        if (!slot.muon || !p.grad().defined()) continue;
        const torch::Tensor& grad = p.grad();
        if (!slot.buffer.defined()) slot.buffer = torch::zeros_like(grad, torch::MemoryFormat::Preserve);
        slot.buffer.lerp_(grad, 1.0 - s_.momentum);
        const torch::Tensor update = s_.nesterov ? grad.lerp(slot.buffer, s_.momentum) : slot.buffer;
        p.mul_(1.0 - g.lr * g.weight_decay);
        int64_t row = 0;
        for (const int64_t rows : parts(slot.matrix, p)) {
          // In the reference model's orientation: its rows and columns, its memory order.
          const bool t = slot.matrix.transposed;
          const torch::Tensor part = t ? update.narrow(0, row, rows).t() : update.narrow(0, row, rows);
          const torch::Tensor o = newton_schulz(part, s_.ns_steps, s_.eps);
          p.narrow(0, row, rows).add_(t ? o.t() : o, -adjusted_lr(g.lr, s_.adjust_lr, part.size(0), part.size(1)));
          row += rows;
        }
        ++slot.steps;
      }
    }
  }

  OptimizerState state() const override {
    OptimizerState adam = adamw_->state();
    std::map<std::string, std::vector<std::pair<std::string, torch::Tensor>>> adam_tensors;
    for (auto& [key, t] : adam.tensors) adam_tensors[key.substr(0, key.rfind('/'))].emplace_back(key, t);
    OptimizerState out;
    out.meta = detail::base_meta(kName, groups_);
    nlohmann::json steps = nlohmann::json::object();
    size_t k = 0;
    for (const auto& g : groups_) {
      for (const auto& name : g.names) {
        const Slot& slot = slots_[k++];
        if (!slot.muon) {
          for (auto& entry : adam_tensors[name]) out.tensors.push_back(entry);
          if (adam.meta["steps"].contains(name)) steps[name] = adam.meta["steps"][name];
        } else if (slot.steps > 0) {
          detail::add_tensor(out, name, "momentum_buffer", slot.buffer);
          steps[name] = slot.steps;
        }
      }
    }
    out.meta["steps"] = std::move(steps);
    out.meta["hyperparameters"] = {
        {"momentum", s_.momentum},
        {"nesterov", s_.nesterov},
        {"ns_steps", s_.ns_steps},
        {"eps", s_.eps},
        {"adjust_lr", s_.adjust_lr == config::MuonAdjustLr::kOriginal ? "original" : "match_rms_adamw"},
        {"adamw", adam.meta["hyperparameters"]}};
    return out;
  }

  void load_state(const OptimizerState& state) override {
    // Every check first (shapes, dtypes, names), then the AdamW part hands over to its optimizer.
    detail::StateLayout layout{kName, /*counts_steps=*/true, [this](size_t, size_t index, const torch::Tensor& p) {
                                 const std::vector<int64_t> shape = p.sizes().vec();
                                 if (slots_[index].muon) {
                                   return std::vector<detail::TensorSpec>{{"momentum_buffer", shape, p.scalar_type()}};
                                 }
                                 return std::vector<detail::TensorSpec>{{"exp_avg", shape, p.scalar_type()},
                                                                        {"exp_avg_sq", shape, p.scalar_type()}};
                               }};
    std::vector<detail::LoadedParam> loaded = detail::check_and_copy(state, groups_, layout);
    OptimizerState adam;
    adam.meta = detail::base_meta("adamw", adamw_->groups());
    adam.meta["steps"] = nlohmann::json::object();
    std::vector<Slot> fresh = slots_;
    size_t k = 0;
    for (const auto& g : groups_) {
      for (const auto& name : g.names) {
        detail::LoadedParam& in = loaded[k];
        Slot& slot = fresh[k++];
        slot.buffer = torch::Tensor();
        slot.steps = 0;
        if (!in.has_state) continue;
        if (slot.muon) {
          slot.buffer = in.tensors[0];
          slot.steps = in.step;
          continue;
        }
        adam.tensors.emplace_back(name + "/exp_avg", in.tensors[0]);
        adam.tensors.emplace_back(name + "/exp_avg_sq", in.tensors[1]);
        adam.meta["steps"][name] = in.step;
      }
    }
    adamw_->load_state(adam);
    slots_ = std::move(fresh);
  }

 private:
  struct Slot {
    bool muon = false;
    MatrixParts matrix;
    torch::Tensor buffer;  // momentum_buffer, undefined before the first step
    int64_t steps = 0;
  };

  static std::vector<int64_t> parts(const MatrixParts& m, const torch::Tensor& p) {
    return m.row_parts.empty() ? std::vector<int64_t>{p.size(0)} : m.row_parts;
  }

  static void check_matrix(const std::string& name, const torch::Tensor& p, const MatrixParts& m) {
    if (p.dim() != 2) {
      throw util::ConfigError("muon: parameter '" + name + "' has " + std::to_string(p.dim()) +
                                  " dimensions; Muon orthogonalises matrices",
                              "leave it out of optimizer.muon.params: it takes AdamW steps");
    }
    int64_t rows = 0;
    for (const int64_t r : parts(m, p)) rows += r;
    if (rows != p.size(0)) {
      throw util::ConfigError("muon: the parts of '" + name + "' add up to " + std::to_string(rows) +
                                  " rows, the parameter has " + std::to_string(p.size(0)),
                              "this is a bug in the model's layout; please report it");
    }
  }

  MuonSettings s_;
  std::vector<Slot> slots_;  // one per parameter, in group order
  std::unique_ptr<Optimizer> adamw_;
};

}  // namespace

torch::Tensor newton_schulz(const torch::Tensor& update, int64_t steps, double eps) {
  torch::NoGradGuard no_grad;
  const bool tall = update.size(0) > update.size(1);
  // A contiguous copy, even when the update is bf16 already (without nesterov it is the momentum
  // buffer itself) or a transposed view (the reference model's tensor is contiguous that way).
  torch::Tensor x =
      update.to(torch::kBFloat16, /*non_blocking=*/false, /*copy=*/true, torch::MemoryFormat::Contiguous);
  if (tall) x = x.t();
  x.div_(x.norm().clamp_min(eps));
  for (int64_t i = 0; i < steps; ++i) {
    const torch::Tensor gram = torch::mm(x, x.t());
    const torch::Tensor poly = torch::addmm(gram, gram, gram, /*beta=*/kB, /*alpha=*/kC);
    x = torch::addmm(x, poly, x, /*beta=*/kA);
  }
  return tall ? x.t() : x;
}

std::unique_ptr<Optimizer> make_muon(std::vector<ParamGroup> groups, const MuonMatrices& matrices,
                                     const MuonSettings& settings) {
  return std::make_unique<Muon>(std::move(groups), matrices, settings);
}

MuonMatrices muon_targets(const std::vector<std::string>& globs, const NamedParams& params,
                          const ModelMatrices& layout) {
  MuonMatrices out;
  if (globs.empty()) {
    for (const auto& [name, p] : params) {
      if (auto it = layout.find(name); it != layout.end() && p.dim() == 2) out.emplace(name, it->second);
    }
    if (out.empty()) {
      throw util::ConfigError("optimizer.name=muon: none of the trained parameters is a hidden layer's weight matrix",
                              "name the matrices Muon should update with optimizer.muon.params (e.g. LoRA's "
                              "['*lora_A*', '*lora_B*']), or use optimizer.name=adamw");
    }
    return out;
  }
  for (const auto& glob : globs) {
    bool matched = false;
    for (const auto& [name, p] : params) {
      if (::fnmatch(glob.c_str(), name.c_str(), 0) != 0) continue;
      matched = true;
      if (p.dim() != 2) {
        throw util::ConfigError("optimizer.muon.params: glob '" + glob + "' matches '" + name + "', which has " +
                                    std::to_string(p.dim()) + " dimensions; Muon orthogonalises matrices",
                                "narrow the glob to weight matrices; the other parameters take AdamW steps");
      }
      auto it = layout.find(name);
      out.emplace(name, it != layout.end() ? it->second : MatrixParts{});
    }
    if (!matched) {
      throw util::ConfigError("optimizer.muon.params: glob '" + glob + "' matches no trained parameter",
                              "see `hftrain plan` for the parameter names, or remove the glob");
    }
  }
  return out;
}

}  // namespace hftrain::optim
