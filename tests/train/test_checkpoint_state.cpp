// Each state file's writer and reader are a pair: every field a record holds comes back from the
// reader equal (so a field added to one and not the other fails here, not in a resume).
#include "../torch_catch.h"  // first: see the file

#include <fstream>

#include "../config/helpers.h"
#include "train/state/checkpoint_state.h"

using namespace hftrain;

namespace {

void write(const test::TempDir& d, const char* name, const nlohmann::json& record) {
  std::ofstream(d.path() / name) << record.dump(2);
}

}  // namespace

TEST_CASE("checkpoint state: trainer_state.json round-trips every field", "[train][checkpoint]") {
  test::TempDir d;
  train::SavedTrainerState s;
  s.state.step = 12;
  s.state.total_steps = 40;
  s.state.epoch = 1.25;
  s.state.tokens_seen = 4096;
  s.state.best_eval_loss = 2.5;
  s.state.best_step = 8;
  s.state.best_metric = 0.625;
  s.state.best_metric_name = "eval_accuracy";
  s.state.last_eval_loss = 2.75;
  s.state.last_eval_step = 12;
  s.state.early_stopping_best = 2.5;
  s.state.early_stopping_bad = 1;
  s.source_tokens = std::map<std::string, int64_t>{{"books", 3000}, {"code", 1096}};
  s.window_loss_sum = 123.5;
  s.window_targets = 77;
  s.divergence = train::DivergenceJudge::State{{2.5, 2.25, 2.125}, 2};
  write(d, train::kTrainerStateFile, train::trainer_state_record(s));
  const train::SavedTrainerState r = train::read_trainer_state(d.path());
  CHECK(r.state.step == 12);
  CHECK(r.state.total_steps == 40);
  CHECK(r.state.epoch == 1.25);
  CHECK(r.state.tokens_seen == 4096);
  CHECK(r.state.best_eval_loss == 2.5);
  CHECK(r.state.best_step == 8);
  CHECK(r.state.best_metric == 0.625);
  CHECK(r.state.best_metric_name == "eval_accuracy");
  CHECK(r.state.last_eval_loss == 2.75);
  CHECK(r.state.last_eval_step == 12);
  CHECK(r.state.early_stopping_best == 2.5);
  CHECK(r.state.early_stopping_bad == 1);
  CHECK(r.source_tokens == s.source_tokens);
  CHECK(r.window_loss_sum == 123.5);
  CHECK(r.window_targets == 77);
  REQUIRE(r.divergence);
  CHECK(r.divergence->recent == std::vector<double>{2.5, 2.25, 2.125});
  CHECK(r.divergence->consecutive == 2);

  // Before any evaluation the optional figures are null, and come back as none.
  train::SavedTrainerState fresh;
  write(d, train::kTrainerStateFile, train::trainer_state_record(fresh));
  const train::SavedTrainerState f = train::read_trainer_state(d.path());
  CHECK_FALSE(f.state.best_eval_loss);
  CHECK_FALSE(f.state.last_eval_loss);
  CHECK_FALSE(f.state.early_stopping_best);
  CHECK_FALSE(f.source_tokens);
  CHECK_FALSE(f.divergence);

  // A checkpoint from before trainer.metric_for_best_model ranked by the eval loss.
  auto old = train::trainer_state_record(s);
  old.erase("best_metric");
  old.erase("best_metric_name");
  write(d, train::kTrainerStateFile, old);
  const train::SavedTrainerState o = train::read_trainer_state(d.path());
  CHECK(o.state.best_metric == 2.5);
  CHECK(o.state.best_metric_name == "eval_loss");
}

TEST_CASE("checkpoint state: the divergence judge resumes with its window", "[train][checkpoint]") {
  train::DivergenceJudge alone(3.0, 3, 0), resumed(3.0, 3, 0);
  for (double loss : {2.0, 2.1, 1.9, 2.0}) alone.judge(loss, 1.0);
  resumed.restore(alone.state());
  // The same spike is bad for both: the window came back whole.
  CHECK(resumed.judge(9.0, 1.0).bad == alone.judge(9.0, 1.0).bad);
  CHECK(resumed.median() == alone.median());
  CHECK(resumed.state().recent.size() == 3);
}

TEST_CASE("checkpoint state: data.json round-trips every field", "[train][checkpoint]") {
  test::TempDir d;
  const train::SavedDataState s{.num_samples = 160, .cursor = 44, .document_mask = true, .epoch = 2, .seed = 7,
                                .batch_size = 4};
  write(d, train::kDataFile, train::data_state_record(s));
  const train::SavedDataState r = train::read_data_state(d.path());
  CHECK(r.num_samples == 160);
  CHECK(r.cursor == 44);
  CHECK(r.document_mask);
  CHECK(r.epoch == 2);
  CHECK(r.seed == 7);
  CHECK(r.batch_size == 4);
}

TEST_CASE("checkpoint state: scheduler.json and scaler.json round-trip", "[train][checkpoint]") {
  test::TempDir d;
  write(d, train::kSchedulerFile, train::scheduler_record(9, train::SavedPlateau{0.25, 1.5, 2, 3}));
  const auto p = train::read_plateau_state(d.path());
  REQUIRE(p);
  CHECK(p->factor == 0.25);
  CHECK(p->best == 1.5);
  CHECK(p->num_bad == 2);
  CHECK(p->cooldown_left == 3);
  // No evaluation yet: the best is none (the initial infinity), not a number.
  write(d, train::kSchedulerFile, train::scheduler_record(9, train::SavedPlateau{1.0, std::nullopt, 0, 0}));
  CHECK_FALSE(train::read_plateau_state(d.path())->best);
  write(d, train::kSchedulerFile, train::scheduler_record(9, std::nullopt));
  CHECK_FALSE(train::read_plateau_state(d.path()));

  write(d, train::kScalerFile, train::scaler_record({true, 32768.0, 5}));
  const train::SavedScaler sc = train::read_scaler_state(d.path());
  CHECK(sc.enabled);
  CHECK(sc.scale == 32768.0);
  CHECK(sc.growth_tracker == 5);
  write(d, train::kScalerFile, train::scaler_record({false, 0, 0}));
  CHECK_FALSE(train::read_scaler_state(d.path()).enabled);
}
