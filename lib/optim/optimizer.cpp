#include "optim/optimizer.h"

#include <algorithm>

#include "optim/adafactor.h"
#include "optim/adagrad.h"
#include "optim/adamw_8bit.h"
#include "optim/apollo_adamw.h"
#include "optim/fused_adamw.h"
#include "optim/fused_sgd.h"
#include "optim/galore_adamw.h"
#include "optim/lion.h"
#include "optim/muon.h"
#include "optim/param_groups.h"
#include "optim/rmsprop.h"
#include "optim/schedule_free_adamw.h"
#include "util/error.h"

namespace hftrain::optim {

void Optimizer::zero_grad() {
  for (auto& g : groups_) {
    for (auto& p : g.params) p.mutable_grad() = torch::Tensor();
  }
}

void Optimizer::set_lr_factor(double factor) {
  for (auto& g : groups_) g.lr = g.base_lr * factor;
}

namespace {
// bitsandbytes 0.50's block for optimizer state (adamw_8bit.h); one value for the optimizer and
// for the strategies that cut its state (state_blocks).
constexpr int64_t kAdamW8bitBlock = 256;
}  // namespace

namespace {
// The parameters in group order, as the optimizers walk them (and their per-parameter flags run).
NamedParams in_group_order(const std::vector<ParamGroup>& groups) {
  NamedParams ordered;
  for (const auto& g : groups) {
    for (size_t i = 0; i < g.params.size(); ++i) ordered.emplace_back(g.names[i], g.params[i]);
  }
  return ordered;
}
}  // namespace

bool StateBlocks::is_block_key(const std::string& key) const {
  return std::find(block_keys.begin(), block_keys.end(), key) != block_keys.end();
}

StateBlocks state_blocks(const config::OptimizerConfig& config) {
  if (config.name == config::OptimizerName::kAdamW8bit) return {kAdamW8bitBlock, {"absmax1", "absmax2"}};
  return {};
}

std::unique_ptr<Optimizer> make_optimizer(const config::OptimizerConfig& config, const NamedParams& params,
                                          const std::vector<int64_t>& whole_numels, const ModelMatrices& matrices) {
  std::vector<std::string> names;
  for (const auto& [name, tensor] : params) names.push_back(name);
  const Grouping grouping = group_parameters(names, config);
  std::vector<ParamGroup> groups(grouping.groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    groups[g].base_lr = groups[g].lr = grouping.groups[g].lr;
    groups[g].weight_decay = grouping.groups[g].weight_decay;
  }
  for (size_t i = 0; i < params.size(); ++i) {
    auto& g = groups[grouping.group_of[i]];
    g.names.push_back(params[i].first);
    g.params.push_back(params[i].second);
    if (!whole_numels.empty()) g.whole_numels.push_back(whole_numels.at(i));
  }

  const double beta1 = config.beta1.value_or(0.9);
  switch (config.name) {
    case config::OptimizerName::kAdamW:
      return make_fused_adamw(std::move(groups), {.beta1 = beta1, .beta2 = config.beta2.value_or(0.999),
                                                  .eps = config.eps, .amsgrad = config.amsgrad});
    case config::OptimizerName::kSgd:
      return make_fused_sgd(std::move(groups), config.momentum, config.nesterov);
    case config::OptimizerName::kAdafactor:
      return make_adafactor(std::move(groups), config.adafactor);
    case config::OptimizerName::kLion:
      return make_lion(std::move(groups), beta1, config.beta2.value_or(0.99));
    case config::OptimizerName::kAdamW8bit:
      return make_adamw_8bit(std::move(groups), {.beta1 = beta1,
                                                 .beta2 = config.beta2.value_or(0.999),
                                                 .eps = config.eps,
                                                 .min_8bit_size = 4096,
                                                 .block_size = kAdamW8bitBlock});
    case config::OptimizerName::kAdagrad:
      return make_adagrad(std::move(groups), {.lr_decay = config.adagrad.lr_decay,
                                              .initial_accumulator_value = config.adagrad.initial_accumulator_value,
                                              .eps = config.eps});
    case config::OptimizerName::kRmsprop:
      return make_rmsprop(std::move(groups), {.alpha = config.rmsprop.alpha, .eps = config.eps,
                                              .momentum = config.momentum, .centered = config.rmsprop.centered});
    case config::OptimizerName::kScheduleFreeAdamW:
      return make_schedule_free_adamw(std::move(groups), {.beta1 = beta1, .beta2 = config.beta2.value_or(0.999),
                                                          .eps = config.eps,
                                                          .warmup_steps = config.schedule_free.warmup_steps,
                                                          .r = config.schedule_free.r,
                                                          .weight_lr_power = config.schedule_free.weight_lr_power});
    case config::OptimizerName::kGaloreAdamW: {
      std::vector<bool> projected = galore_targets(config.galore.target_modules, in_group_order(groups));
      return make_galore_adamw(std::move(groups), std::move(projected),
                               {.beta1 = beta1, .beta2 = config.beta2.value_or(0.999), .eps = config.eps,
                                .rank = config.galore.rank, .update_proj_gap = config.galore.update_proj_gap,
                                .scale = config.galore.scale, .proj_type = config.galore.proj_type});
    }
    case config::OptimizerName::kApolloAdamW: {
      std::vector<bool> targeted = apollo_targets(config.apollo.target_modules, in_group_order(groups));
      const config::ApolloConfig& a = config.apollo;
      return make_apollo_adamw(std::move(groups), std::move(targeted),
                               {.beta1 = beta1,
                                .beta2 = config.beta2.value_or(0.999),
                                .eps = config.eps,
                                .rank = a.rank,
                                .update_proj_gap = a.update_proj_gap,
                                .scale = a.scale,
                                .scale_type = a.scale_type,
                                .proj_type = a.proj_type,
                                .scale_front = a.scale_front,
                                .norm_growth_limiter = a.norm_growth_limiter});
    }
    case config::OptimizerName::kMuon: {
      const config::MuonConfig& m = config.muon;
      return make_muon(std::move(groups), muon_targets(m.params, params, matrices),
                       {.momentum = m.momentum,
                        .nesterov = m.nesterov,
                        .ns_steps = m.ns_steps,
                        .eps = m.eps,
                        .adjust_lr = m.adjust_lr,
                        .beta1 = beta1,
                        .beta2 = config.beta2.value_or(0.999),
                        .adam_eps = config.eps});
    }
  }
  return nullptr;
}

}  // namespace hftrain::optim
