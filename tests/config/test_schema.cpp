#include <set>

#include <catch2/catch.hpp>

#include "config/schema.h"
#include "config/yaml_load.h"
#include "helpers.h"

using namespace hftrain;
using namespace hftrain::test;
using Catch::Matchers::Contains;

TEST_CASE("defaults fill every key of the typed config", "[config][schema]") {
  auto c = resolve(kMinimal).values;
  CHECK(c.run.name == "run");
  CHECK(c.run.output_dir == "runs/run");  // the default interpolates ${run.name}
  CHECK(c.model.arch == config::ModelArch::kGpt2);
  CHECK(c.model.d_model == 768);
  CHECK(c.data.seq_len == 1024);  // ${model.max_seq_len}
  CHECK(c.optimizer.lr == Approx(3e-4));
  CHECK(c.scheduler.name == config::SchedulerName::kLinear);
  CHECK(c.trainer.max_steps == 100);
  CHECK_FALSE(c.trainer.max_epochs.has_value());
  CHECK_FALSE(c.model.from.has_value());
  CHECK(c.distributed.strategy == config::Strategy::kDdp);
}

TEST_CASE("every schema key has a doc, a valid default and a unique path", "[config][schema]") {
  const auto& schema = config::product_schema();
  std::set<std::string> seen;
  for (const auto& k : schema.keys()) {
    INFO(k.path);
    CHECK_FALSE(k.doc.empty());
    CHECK(k.on_resume != config::ResumeChange::kUnset);  // what changing it on resume means
    CHECK(seen.insert(k.path).second);
    bool has_section = false;
    for (const auto& [name, doc] : schema.sections()) has_section = has_section || name == k.segments[0];
    CHECK(has_section);
  }
  // The names later issues and users rely on.
  for (const char* key : {"run.name", "run.output_dir", "run.seed", "model.arch", "model.from",
                          "model.n_layer", "model.n_head", "model.d_model", "model.max_seq_len",
                          "model.vocab_size", "tokenizer.type", "tokenizer.path", "data.train",
                          "data.validation", "data.seq_len", "optimizer.name", "optimizer.lr",
                          "optimizer.weight_decay", "scheduler.name", "scheduler.warmup_steps",
                          "trainer.max_steps", "trainer.max_epochs", "trainer.micro_batch_size",
                          "trainer.grad_accum_steps", "trainer.max_grad_norm", "trainer.precision",
                          "trainer.log_every", "trainer.eval_every", "checkpoint.every_steps",
                          "checkpoint.keep_last", "distributed.strategy", "distributed.backend"}) {
    CHECK(schema.find(key) != nullptr);
  }
}

TEST_CASE("wrong types say what was expected and where the value came from", "[config][schema]") {
  auto err = resolve_error("trainer:\n  max_steps: lots\n");
  CHECK_THAT(err, Contains("recipe.yaml:2:14") && Contains("`trainer.max_steps` expects an integer") &&
                      Contains("got `lots`"));
  CHECK_THAT(resolve_error("trainer:\n  max_steps: [1]\n"), Contains("got a list"));
  CHECK_THAT(resolve_error("trainer:\n  max_steps: '10'\n"), Contains("got the string \"10\""));
  CHECK_THAT(resolve_error(std::string(kMinimal) + "checkpoint: {keep_best: maybe}\n"),
             Contains("write true or false"));
  CHECK_THAT(resolve_error(std::string(kMinimal) + "run: 3\n"),
             Contains("`run` is a section and takes keys, not a scalar"));
}

TEST_CASE("out-of-range and disallowed values list what is allowed", "[config][schema]") {
  CHECK_THAT(resolve_error("trainer:\n  max_steps: 0\n"), Contains("out of range [1, inf)"));
  auto err = resolve_error(kMinimal, {"trainer.precision=bf61"});
  CHECK_THAT(err, Contains("allowed: fp32, bf16, fp16") && Contains("did you mean `bf16`?"));
  CHECK_THAT(resolve_error(std::string(kMinimal) + "optimizer: {lr: -1.0}\n"), Contains("out of range [0, 10]"));
}

TEST_CASE("a list of floats checks each item and says which", "[config][schema]") {
  CHECK_THAT(resolve_error(kMinimal, {"model.rope_scaling.short_factor=1.5"}),
             Contains("`model.rope_scaling.short_factor` expects a list of floats, got a scalar") &&
                 Contains("write [1.0, 1.5, ...]"));
  CHECK_THAT(resolve_error(kMinimal, {"model.rope_scaling.short_factor=[1.0, 0]"}),
             Contains("`model.rope_scaling.short_factor[1]` = 0 is out of range"));
  CHECK_THAT(resolve_error(kMinimal, {"model.rope_scaling.long_factor=[1.0, many]"}),
             Contains("`model.rope_scaling.long_factor[1]` expects a float, got `many`"));
  CHECK_THAT(resolve_error(kMinimal, {"model.rope_scaling.long_factor=[[1.0]]"}), Contains("long_factor[0]"));
}

TEST_CASE("huge numbers and NaN are rejected", "[config][schema]") {
  CHECK_THAT(resolve_error("trainer:\n  max_steps: 99999999999999999999999\n"),
             Contains("does not fit in a 64-bit integer"));
  CHECK_THAT(resolve_error(std::string(kMinimal) + "optimizer: {lr: 1e999}\n"), Contains("too large"));
  CHECK_THAT(resolve_error(std::string(kMinimal) + "optimizer: {lr: .nan}\n"), Contains("is NaN"));
  CHECK_THAT(resolve_error(std::string(kMinimal) + "optimizer: {lr: .inf}\n"), Contains("is not finite"));
}

TEST_CASE("convenient spellings are accepted", "[config][schema]") {
  auto c = resolve("trainer: {max_steps: 1e4, max_grad_norm: .inf}\ndistributed: {strategy: fsdp}\n"
                   "data: {train: one.txt}\n").values;
  CHECK(c.trainer.max_steps == 10000);
  CHECK(std::isinf(c.trainer.max_grad_norm));
  CHECK(c.distributed.strategy == config::Strategy::kZero3);  // alias
  CHECK(c.data.train == paths_of({"one.txt"}));  // a single string is a list of one
  CHECK_THAT(resolve_error("trainer: {max_steps: 2.5}\n"), Contains("expects an integer"));
}

TEST_CASE("a test schema converts sizes, counts and durations", "[config][schema]") {
  // The typed conversion is independent of the product's keys.
  config::Schema s;
  config::KeySpec spec;
  spec.path = "x";
  config::Diagnostics d;
  auto node = [](const char* text) { return config::parse_yaml_value(text, config::Origin{}); };
  spec.type = config::Type::kSize;
  CHECK(std::get<int64_t>(*s.convert(node("25MiB"), spec, d)) == 26214400);
  spec.type = config::Type::kCount;
  CHECK(std::get<int64_t>(*s.convert(node("2B"), spec, d)) == 2000000000);
  spec.type = config::Type::kDuration;
  CHECK(std::get<double>(*s.convert(node("10m"), spec, d)) == 600.0);
  spec.min = 1;
  CHECK_FALSE(s.convert(node("500ms"), spec, d).has_value());
  spec.type = config::Type::kSize;
  CHECK_FALSE(s.convert(node("3 parsecs"), spec, d).has_value());
  REQUIRE(d.size() == 2);
  CHECK_THAT(d.items()[0].message, Contains("out of range"));
  CHECK_THAT(d.items()[1].message, Contains("unknown size unit"));
}
