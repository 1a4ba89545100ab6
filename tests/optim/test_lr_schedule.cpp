// hftrain's schedules against learning rates recorded from the real transformers.get_scheduler
// and torch's ReduceLROnPlateau (tests/fixtures/hf_schedules.json, made by
// tests/conformance/gen_schedule_fixtures.py), plus closed-form spot checks.
#include <cmath>
#include <fstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "../config/helpers.h"
#include "optim/lr_schedule.h"

using namespace hftrain;
using Json = nlohmann::json;

namespace {

Json fixtures() {
  std::ifstream in(std::string(HFTRAIN_TEST_FIXTURES_DIR) + "/hf_schedules.json");
  REQUIRE(in.good());
  return Json::parse(in);
}

std::string yaml_scalar(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// The Hugging Face keyword arguments as hftrain overrides.
std::vector<std::string> overrides_for(const Json& c, double base_lr) {
  std::vector<std::string> o = {"scheduler.name=" + c["name"].get<std::string>(),
                                "scheduler.warmup_steps=" + c["warmup_steps"].dump(),
                                "trainer.max_steps=" + c["total_steps"].dump(),
                                "optimizer.lr=" + Json(base_lr).dump()};
  static const std::map<std::string, std::string> kKeys = {
      {"num_cycles", "scheduler.num_cycles"},       {"min_lr_rate", "scheduler.min_lr_rate"},
      {"min_lr", "scheduler.min_lr"},               {"power", "scheduler.power"},
      {"lr_end", "scheduler.lr_end"},               {"timescale", "scheduler.timescale"},
      {"num_decay_steps", "scheduler.wsd.decay_steps"}, {"num_stable_steps", "scheduler.wsd.stable_steps"},
      {"warmup_type", "scheduler.wsd.warmup_type"}, {"decay_type", "scheduler.wsd.decay_type"},
      {"min_lr_ratio", "scheduler.min_lr_rate"},    {"patience", "scheduler.plateau.patience"},
      {"factor", "scheduler.plateau.factor"},       {"cooldown", "scheduler.plateau.cooldown"},
      {"mode", "scheduler.plateau.mode"},           {"threshold", "scheduler.plateau.threshold"},
      {"threshold_mode", "scheduler.plateau.threshold_mode"}};
  for (const auto& [k, v] : c["kwargs"].items()) {
    const auto& key = kKeys.at(k);
    // plateau's min_lr is its own key
    o.push_back((c["name"] == "reduce_lr_on_plateau" && k == "min_lr" ? "scheduler.plateau.min_lr" : key) + "=" +
                yaml_scalar(v));
  }
  return o;
}

}  // namespace

TEST_CASE("every step-based schedule matches transformers.get_scheduler", "[optim][schedule]") {
  const Json f = fixtures();
  const double base_lr = f["base_lr"];
  for (const auto& c : f["schedules"]) {
    const auto overrides = overrides_for(c, base_lr);
    INFO(c["name"].get<std::string>() << " " << c["kwargs"].dump());
    const auto cfg = test::resolve("{}", overrides).values;
    const auto params = optim::make_schedule_params(cfg.scheduler, cfg.optimizer.lr, c["total_steps"]);
    const auto& lrs = c["lr"];
    for (size_t step = 0; step < lrs.size(); ++step) {
      INFO("step " << step);
      const double expected = lrs[step];
      CHECK(base_lr * optim::lr_factor(params, static_cast<int64_t>(step)) ==
            Approx(expected).epsilon(1e-12).margin(1e-15));
    }
  }
}

TEST_CASE("reduce_lr_on_plateau matches torch's ReduceLROnPlateau", "[optim][schedule]") {
  const Json f = fixtures();
  const double base_lr = f["base_lr"];
  for (auto c : f["plateau"]) {
    c["name"] = "reduce_lr_on_plateau";
    c["warmup_steps"] = 0;
    c["total_steps"] = 100;
    INFO(c["kwargs"].dump());
    const auto cfg = test::resolve("{}", overrides_for(c, base_lr)).values;
    optim::PlateauSchedule plateau(cfg.scheduler.plateau, cfg.optimizer.lr);
    for (size_t i = 0; i < c["metrics"].size(); ++i) {
      INFO("evaluation " << i);
      CHECK(base_lr * plateau.observe(c["metrics"][i]) == Approx(c["lr"][i].get<double>()).epsilon(1e-12));
    }
  }
}

TEST_CASE("closed-form spot checks", "[optim][schedule]") {
  config::SchedulerConfig c;
  c.name = config::SchedulerName::kLinear;
  c.warmup_steps = 10;
  auto p = optim::make_schedule_params(c, 1e-3, 110);
  CHECK(optim::lr_factor(p, 0) == 0.0);  // the first update uses lr 0 during warmup, as in HF
  CHECK(optim::lr_factor(p, 5) == Approx(0.5));
  CHECK(optim::lr_factor(p, 60) == Approx(0.5));
  CHECK(optim::lr_factor(p, 200) == 0.0);
  c.name = config::SchedulerName::kCosine;
  p = optim::make_schedule_params(c, 1e-3, 110);
  CHECK(optim::lr_factor(p, 60) == Approx(0.5));  // halfway through half a cosine wave
  c.name = config::SchedulerName::kInverseSqrt;
  p = optim::make_schedule_params(c, 1e-3, 110);
  CHECK(optim::lr_factor(p, 40) == Approx(1.0 / std::sqrt(4.0)));
}

TEST_CASE("warmup_stable_decay phases must fit in training", "[optim][schedule]") {
  config::SchedulerConfig c;
  c.name = config::SchedulerName::kWarmupStableDecay;
  c.warmup_steps = 50;
  c.wsd.decay_steps = 60;
  CHECK_THROWS_AS(optim::make_schedule_params(c, 1e-3, 100), util::ConfigError);
  CHECK(optim::make_schedule_params(c, 1e-3, 200).stable_steps == 90);
}

TEST_CASE("scheduler rules in the config", "[optim][schedule][config]") {
  using Catch::Matchers::Contains;
  CHECK_THAT(test::resolve_error(test::kMinimal, {"scheduler.name=cosine_with_min_lr"}),
             Contains("needs `scheduler.min_lr` or `scheduler.min_lr_rate`"));
  CHECK_THAT(test::resolve_error(test::kMinimal, {"scheduler.min_lr=0.1", "scheduler.min_lr_rate=0.1"}),
             Contains("both set"));
  CHECK_THAT(test::resolve_error(test::kMinimal, {"scheduler.name=warmup_stable_decay"}),
             Contains("needs `scheduler.wsd.decay_steps`"));
  CHECK_THAT(test::resolve_error(test::kMinimal, {"scheduler.name=polynomial", "scheduler.lr_end=1"}),
             Contains("must be smaller than `optimizer.lr`"));
}

TEST_CASE("scheduler.warmup_ratio warms up for the Trainer's ceil(total x ratio) steps", "[optim][schedule]") {
  config::SchedulerConfig c;
  c.name = config::SchedulerName::kLinear;
  c.warmup_ratio = 0.15;
  // TrainingArguments.get_warmup_steps: math.ceil(num_training_steps * warmup_ratio)
  auto p = optim::make_schedule_params(c, 1e-3, 37);  // 5.55 -> 6
  CHECK(p.warmup_steps == 6);
  CHECK(optim::lr_factor(p, 3) == Approx(0.5));
  CHECK(optim::lr_factor(p, 6) == Approx(1.0));
  c.warmup_ratio = 0.1;
  CHECK(optim::make_schedule_params(c, 1e-3, 110).warmup_steps == 11);
  c.warmup_ratio = 0.0;
  CHECK(optim::make_schedule_params(c, 1e-3, 110).warmup_steps == 0);
  // inverse_sqrt's timescale defaults to the warmup, however it was given
  c.name = config::SchedulerName::kInverseSqrt;
  c.warmup_ratio = 0.1;
  CHECK(optim::make_schedule_params(c, 1e-3, 110).timescale == 11);
  using Catch::Matchers::Contains;
  CHECK_THAT(test::resolve_error(test::kMinimal, {"scheduler.warmup_ratio=0.1", "scheduler.warmup_steps=5"}),
             Contains("set only one"));
  CHECK_THAT(test::resolve_error(test::kMinimal, {"scheduler.warmup_ratio=1.5"}), Contains("scheduler.warmup_ratio"));
}
