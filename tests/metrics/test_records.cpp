#include <cmath>
#include <limits>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "metrics/records.h"

using namespace hftrain::metrics;
using nlohmann::json;

namespace {
StepMetrics sample_step() {
  StepMetrics m;
  m.step = 120;
  m.epoch = 0.25;
  m.loss = 2.5;
  m.lr = 3e-4;
  m.grad_norm = 0.75;
  m.tokens_seen = 491520;
  m.tokens_per_s = 12345.5;
  m.step_time_ms = 250.0;
  m.data_wait_ms = 1.5;
  m.peak_mem_mb = 1024.0;
  return m;
}
}  // namespace

TEST_CASE("a step record carries every field the issue names", "[metrics][records]") {
  const json j = json::parse(step_record_json(sample_step(), 1700000000.5, MfuField{true, 0.42}));
  CHECK(j["type"] == "train");
  CHECK(j["step"] == 120);
  CHECK(j["epoch"] == 0.25);
  CHECK(j["loss"] == 2.5);
  CHECK(j["lr"] == 3e-4);
  CHECK(j["grad_norm"] == 0.75);
  CHECK(j["tokens_seen"] == 491520);
  CHECK(j["tokens_per_s"] == 12345.5);
  CHECK(j["step_time_ms"] == 250.0);
  CHECK(j["data_wait_ms"] == 1.5);
  CHECK(j["peak_mem_mb"] == 1024.0);
  CHECK(j["mfu"] == 0.42);
  CHECK(j["time"] == 1700000000.5);
  // One line, keys in a stable, readable order.
  const std::string text = step_record_json(sample_step(), 1.0, MfuField{});
  CHECK(text.find('\n') == std::string::npos);
  CHECK(text.rfind(R"({"type":"train","step":120,)", 0) == 0);
}

TEST_CASE("fp16 runs add the loss scale and the skipped steps, other runs have neither", "[metrics][records]") {
  CHECK_FALSE(json::parse(step_record_json(sample_step(), 1, MfuField{})).contains("loss_scale"));
  CHECK_FALSE(json::parse(step_record_json(sample_step(), 1, MfuField{})).contains("skipped_steps"));
  StepMetrics m = sample_step();
  m.loss_scale = 32768.0;
  m.skipped_steps = 2;
  const json j = json::parse(step_record_json(m, 1, MfuField{}));
  CHECK(j["loss_scale"] == 32768.0);
  CHECK(j["skipped_steps"] == 2);
}

TEST_CASE("MFU is absent on CPU and null for an unknown GPU", "[metrics][records]") {
  CHECK_FALSE(json::parse(step_record_json(sample_step(), 1, MfuField{})).contains("mfu"));
  const json unknown =
      json::parse(step_record_json(sample_step(), 1, MfuField{true, std::nullopt}));
  REQUIRE(unknown.contains("mfu"));
  CHECK(unknown["mfu"].is_null());
}

TEST_CASE("unmeasured and non-finite values become null", "[metrics][records]") {
  StepMetrics m = sample_step();
  m.loss = std::numeric_limits<double>::quiet_NaN();
  m.grad_norm = std::numeric_limits<double>::infinity();
  m.peak_mem_mb.reset();
  const json j = json::parse(step_record_json(m, 1, MfuField{}));
  CHECK(j["loss"].is_null());
  CHECK(j["grad_norm"].is_null());
  CHECK(j["peak_mem_mb"].is_null());
  CHECK(j["step"] == 120);
}

TEST_CASE("an eval record carries the loss and its perplexity", "[metrics][records]") {
  const json j =
      json::parse(eval_record_json(EvalMetrics{.step = 500, .epoch = 1.0, .eval_loss = 2.0}, 5));
  CHECK(j["type"] == "eval");
  CHECK(j["step"] == 500);
  CHECK(j["eval_loss"] == 2.0);
  CHECK(j["eval_ppl"].get<double>() == Approx(std::exp(2.0)));
  CHECK(j["time"] == 5);
  // A diverged model's perplexity overflows; the record says null rather than failing.
  CHECK(std::isinf(perplexity(1000.0)));
  CHECK(json::parse(eval_record_json(EvalMetrics{.eval_loss = 1000.0}, 5))["eval_ppl"].is_null());
}
