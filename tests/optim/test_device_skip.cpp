// Skipping an AdamW update on the device (Optimizer::skip_next_if, the found-inf flag of ATen's
// fused kernel): a flag of 1 leaves parameters, moments and step counts as they were; a flag of 0
// updates exactly as no flag does, so a run that skips on the device equals one that skipped on
// the host.
#include "../torch_catch.h"  // first: see the file

#include "../config/helpers.h"
#include "helpers.h"
#include "optim/optimizer.h"

using namespace hftrain;

namespace {

struct Run {
  optim::NamedParams params;
  std::unique_ptr<optim::Optimizer> opt;
};

Run make_run(const optim::NamedParams& init) {
  const auto cfg = test::resolve(test::kMinimal, {"optimizer.name=adamw", "optimizer.weight_decay=0.1",
                                                  "optimizer.no_decay=[b]"})
                       .values;
  Run r{test::clone_params(init), nullptr};
  r.opt = optim::make_optimizer(cfg.optimizer, r.params);
  return r;
}

void set_grads(Run& r, int64_t step) {
  for (size_t i = 0; i < r.params.size(); ++i) {
    auto& p = r.params[i].second;
    p.mutable_grad() = torch::sin(torch::arange(p.numel(), torch::kFloat32) * 0.3 + static_cast<double>(step + i))
                           .reshape(p.sizes());
  }
}

}  // namespace

TEST_CASE("AdamW skips an update on the device when the flag holds 1", "[optim][device_skip]") {
  const auto init = test::cos_params({{"w", {4, 3}}, {"b", {3}}});
  Run flagged = make_run(init);
  Run plain = make_run(init);
  REQUIRE(flagged.opt->skips_on_device());
  const auto zero = torch::zeros({}, torch::kFloat32);
  const auto one = torch::ones({}, torch::kFloat32);
  // flagged: steps 1 and 2 applied (flag 0), step 3 skipped (flag 1), step 4 applied;
  // plain: steps 1, 2 and 4 without any flag.
  for (int64_t step = 1; step <= 4; ++step) {
    set_grads(flagged, step);
    flagged.opt->skip_next_if(step == 3 ? one : zero);
    flagged.opt->step();
    flagged.opt->skip_next_if(torch::Tensor());
    if (step == 3) continue;
    set_grads(plain, step);
    plain.opt->step();
  }
  for (size_t i = 0; i < init.size(); ++i) {
    INFO(init[i].first);
    CHECK(torch::equal(flagged.params[i].second, plain.params[i].second));
  }
  const optim::OptimizerState a = flagged.opt->state();
  const optim::OptimizerState b = plain.opt->state();
  CHECK(a.meta["steps"] == b.meta["steps"]);  // 3 each: the skipped step is not counted
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    INFO(a.tensors[i].first);
    CHECK(torch::equal(a.tensors[i].second, b.tensors[i].second));
  }
}

TEST_CASE("a first step skipped on the device leaves the parameters and no state to save", "[optim][device_skip]") {
  const auto init = test::cos_params({{"w", {5}}});
  Run r = make_run(init);
  set_grads(r, 1);
  r.opt->skip_next_if(torch::ones({}, torch::kFloat32));
  r.opt->step();
  CHECK(torch::equal(r.params[0].second, init[0].second));
  const optim::OptimizerState s = r.opt->state();
  CHECK(s.meta["steps"].empty());  // as if never stepped: a checkpoint loads (step counts are >= 1)
  CHECK(s.tensors.empty());
  // and the next update is AdamW's first
  Run fresh = make_run(init);
  set_grads(r, 2);
  set_grads(fresh, 2);
  r.opt->skip_next_if(torch::zeros({}, torch::kFloat32));
  r.opt->step();
  fresh.opt->step();
  CHECK(torch::equal(r.params[0].second, fresh.params[0].second));
}

TEST_CASE("optimizers without a device flag say so", "[optim][device_skip]") {
  const auto cfg = test::resolve(test::kMinimal, {"optimizer.name=lion"}).values;
  auto params = test::cos_params({{"w", {3}}});
  CHECK_FALSE(optim::make_optimizer(cfg.optimizer, params)->skips_on_device());
}
