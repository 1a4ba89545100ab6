// The resume policy: each class of config change on resume is applied, logged, refused unless
// --force, or refused outright, with the key, both values and the new value's origin.
#include <catch2/catch.hpp>

#include "ckpt/resume_policy.h"
#include "config/resolve.h"
#include "util/env.h"
#include "util/error.h"

using namespace hftrain;
using Catch::Matchers::Contains;

namespace {

constexpr const char* kRecipe = "trainer:\n  max_steps: 100\n";

config::ResolvedConfig resolve(const std::vector<std::string>& overrides) {
  return config::resolve_yaml_text(kRecipe, "recipe.yaml", overrides, util::MapEnvironment());
}

std::vector<ckpt::ConfigChange> changes(const std::vector<std::string>& overrides) {
  const auto saved = resolve({});
  const auto now = resolve(overrides);
  return ckpt::diff_configs(saved.values, now.values, now.tree);
}

std::string refusal(const std::vector<std::string>& overrides, bool force = false) {
  try {
    ckpt::check_resume_changes(changes(overrides), force, "runs/a/checkpoint-10");
  } catch (const util::ConfigError& e) {
    return std::string(e.what()) + "\nhint: " + e.hint();
  }
  FAIL("expected the resume to be refused");
  return {};
}

}  // namespace

TEST_CASE("an unchanged config has no changes", "[ckpt][resume]") {
  CHECK(changes({}).empty());
  CHECK(ckpt::check_resume_changes({}, false, "x").notes.empty());
}

TEST_CASE("each change names the key, both values and where the new one came from", "[ckpt][resume]") {
  const auto c = changes({"trainer.log_every=5"});
  REQUIRE(c.size() == 1);
  CHECK(c[0].key == "trainer.log_every");
  CHECK(c[0].before == "10");
  CHECK(c[0].after == "5");
  CHECK_THAT(c[0].origin, Contains("trainer.log_every=5"));
  CHECK(c[0].change == config::ResumeChange::kSafe);
}

TEST_CASE("safe and training changes are applied with a note", "[ckpt][resume]") {
  const auto plan = ckpt::check_resume_changes(
      changes({"trainer.log_every=5", "trainer.max_steps=200", "checkpoint.every_steps=50", "optimizer.lr=1e-4"}),
      false, "ckpt");
  REQUIRE(plan.notes.size() == 4);
  int training_notes = 0;
  for (const auto& n : plan.notes) {
    if (n.find("changes the training") != std::string::npos) {
      ++training_notes;
      CHECK_THAT(n, Contains("optimizer.lr"));
    }
  }
  CHECK(training_notes == 1);
}

TEST_CASE("data-order changes need --force", "[ckpt][resume]") {
  for (const char* o : {"data.seq_len=128", "trainer.micro_batch_size=4", "run.seed=7", "trainer.grad_accum_steps=2"}) {
    INFO(o);
    const std::string msg = refusal({o});
    CHECK_THAT(msg, Contains("changes the data order"));
    CHECK_THAT(msg, Contains("--force"));
    const auto plan = ckpt::check_resume_changes(changes({o}), /*force=*/true, "ckpt");
    REQUIRE(plan.notes.size() == 1);
    CHECK_THAT(plan.notes[0], Contains("--force"));
  }
}

TEST_CASE("impossible changes are refused even with --force", "[ckpt][resume]") {
  const std::string msg = refusal({"model.n_layer=3", "optimizer.name=lion", "model.vocab_size=512"}, true);
  CHECK_THAT(msg, Contains("3 changes"));
  CHECK_THAT(msg, Contains("model.n_layer"));
  CHECK_THAT(msg, Contains("optimizer.name"));
  CHECK_THAT(msg, Contains("model.vocab_size"));
  CHECK_THAT(msg, Contains("cannot change on resume"));
  CHECK_THAT(msg, Contains("model.from=runs/a/checkpoint-10"));
}

TEST_CASE("what does not touch the state is safe", "[ckpt][resume]") {
  for (const char* o : {"model.activation_checkpointing=true", "data.num_workers=1", "distributed.backend=mpi",
                        "run.output_dir=elsewhere", "logging.level=debug", "checkpoint.keep_last=1"}) {
    INFO(o);
    const auto c = changes({o});
    REQUIRE(c.size() >= 1);
    for (const auto& x : c) CHECK(x.change == config::ResumeChange::kSafe);
  }
}
