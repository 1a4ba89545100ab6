#include "../torch_catch.h"  // first: see the file

#include <map>

#include "../config/helpers.h"
#include "ckpt/layout.h"
#include "ckpt/optimizer_shards.h"
#include "ckpt/verify.h"
#include "ckpt/writer.h"
#include "model/weights/safetensors.h"
#include "util/fs.h"
#include "train/state/checkpoint_state.h"
#include "train/trainer.h"

using namespace hftrain;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> overrides(const test::TempDir& d, const std::string& run, const std::string& optimizer) {
  std::string jsonl;
  for (int i = 0; i < 24; ++i)
    jsonl += "{\"text\": \"document " + std::to_string(i) + std::string(i % 7 + 1, 'x') + "\"}\n";
  const auto docs = d.write("docs.jsonl", jsonl);
  return {"data.train=" + docs.string(), "data.cache=false", "data.seq_len=16", "model.max_seq_len=16",
          "model.vocab_size=260", "model.n_layer=1", "model.n_head=2", "model.d_model=16", "model.dropout=0.2",
          "tokenizer.type=byte", "optimizer.name=" + optimizer, "optimizer.lr=0.01", "scheduler.name=linear",
          "scheduler.warmup_steps=2", "trainer.micro_batch_size=2", "trainer.grad_accum_steps=2",
          "trainer.max_grad_norm=0.1", "trainer.max_steps=8", "trainer.log_every=5", "checkpoint.every_steps=4",
          "checkpoint.keep_last=0", "run.output_dir=" + (d.path() / run).string()};
}

// The loss of every logging step.
struct LossLog : train::Callback {
  std::map<int64_t, double> losses;
  void on_log(train::TrainState& s, const train::StepStats& stats) override { losses[s.step] = stats.loss; }
};

// The steps of the saves the callbacks are told of, and how many were background saves.
struct SaveLog : train::Callback {
  std::vector<int64_t> steps;
  int background = 0;
  void on_save(train::TrainState& s, const std::filesystem::path& /*dir*/) override { steps.push_back(s.step); }
  void on_message(train::TrainState& /*s*/, const std::string& line) override {
    if (line.find("in the background") != std::string::npos) ++background;
  }
};

std::vector<torch::Tensor> params_of(train::Trainer& t) {
  std::vector<torch::Tensor> out;
  for (auto& [name, p] : t.model().parameters_by_name()) out.push_back(p.detach().clone());
  return out;
}

}  // namespace

TEST_CASE("a restored trainer continues bit for bit, for every optimizer, and with cpu_offload",
          "[train][ckpt][slow]") {
  struct Case {
    const char* optimizer;
    std::vector<std::string> extra;
  };
  // cpu_offload in one process goes through the sharded strategies: the optimizer state and the
  // masters live in CPU memory and are loaded there on resume.
  const std::vector<Case> cases = {
      {"adamw", {}},
      {"sgd", {}},
      {"adafactor", {}},
      {"lion", {}},
      {"adagrad", {}},
      {"rmsprop", {"optimizer.momentum=0.9"}},
      {"rmsprop", {"distributed.strategy=zero2", "distributed.cpu_offload=true", "optimizer.momentum=0.9"}},
      {"adamw", {"distributed.strategy=zero2", "distributed.cpu_offload=true"}},
      // Saved before any evaluation: the plateau's best is still its initial infinity (null in JSON).
      {"adamw", {"scheduler.name=reduce_lr_on_plateau", "scheduler.warmup_steps=0"}},
      {"adamw", {"distributed.strategy=zero3", "distributed.cpu_offload=true"}},
      // Saved at step 4 between projections (renewed at steps 0, 3 and 6): the resumed run uses
      // the saved projection until step 6.
      {"galore_adamw", {"optimizer.galore.rank=4", "optimizer.galore.update_proj_gap=3"}},
      // The save at step 4 switches the weights to the averaged point and the next step back:
      // the resumed run makes the same switch from the saved point.
      {"schedule_free_adamw",
       {"scheduler.name=constant", "scheduler.warmup_steps=0", "optimizer.schedule_free.warmup_steps=2"}},
      {"schedule_free_adamw",
       {"distributed.strategy=zero2", "distributed.cpu_offload=true", "scheduler.name=constant",
        "scheduler.warmup_steps=0", "optimizer.schedule_free.warmup_steps=2"}},
      {"schedule_free_adamw",
       {"distributed.strategy=zero3", "distributed.cpu_offload=true", "scheduler.name=constant",
        "scheduler.warmup_steps=0", "optimizer.schedule_free.warmup_steps=2"}},
      // bf16 weights with fp32 masters: the checkpoint holds the masters, and the bf16 copies are
      // rounded from them again.
      {"adamw", {"trainer.param_dtype=bf16", "trainer.precision=bf16"}},
      {"lion", {"trainer.param_dtype=bf16", "trainer.precision=bf16"}},
      // ... and zero2 in one process: the masters are its pieces, gathered whole for the saves and
      // the load
      {"adamw", {"distributed.strategy=zero2", "trainer.param_dtype=bf16", "trainer.precision=bf16"}},
  };
  for (const Case& c : cases) {
    INFO(c.optimizer << (c.extra.empty() ? "" : " " + c.extra[0]));
    const bool zero3 = !c.extra.empty() && c.extra[0] == "distributed.strategy=zero3";
    test::TempDir d;
    auto settings = [&](const std::string& run) {
      auto o = overrides(d, run, c.optimizer);
      o.insert(o.end(), c.extra.begin(), c.extra.end());
      return o;
    };
    auto cfg = test::resolve("{}", settings("a")).values;
    train::Trainer straight(cfg, cfg.run.output_dir);
    auto log_a = std::make_shared<LossLog>();
    straight.add_callback(log_a);
    const auto r = straight.train();
    CHECK(r.state.step == 8);
    // zero3's parameters are freed between forwards: its losses say what its weights would.
    const auto expected = zero3 ? std::vector<torch::Tensor>{} : params_of(straight);
    const auto ckpt4 = cfg.run.output_dir + "/checkpoint-4";
    REQUIRE(ckpt::verify_checkpoint(ckpt4).ok());

    auto cfg_b = test::resolve("{}", settings("b")).values;
    train::Trainer resumed(cfg_b, cfg_b.run.output_dir);
    auto log_b = std::make_shared<LossLog>();
    resumed.add_callback(log_b);
    resumed.restore(ckpt4);
    CHECK(resumed.state().step == 4);
    const auto r2 = resumed.train();
    CHECK(r2.state.step == 8);
    // The logging window of step 5 spans the save at step 4: its running sum was restored too.
    REQUIRE(log_b->losses.count(5) == 1);
    CHECK(log_b->losses[5] == log_a->losses[5]);
    CHECK(log_b->losses[8] == log_a->losses[8]);
    if (zero3) continue;
    const auto got = params_of(resumed);
    REQUIRE(got.size() == expected.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(torch::equal(got[i], expected[i]));
  }
}

TEST_CASE("the state files' checks that a resume makes, without a trainer (hftrain verify)", "[train][ckpt]") {
  test::TempDir d;
  auto cfg = test::resolve("{}", overrides(d, "a", "adamw")).values;
  train::Trainer(cfg, cfg.run.output_dir).train();
  const std::filesystem::path ck = cfg.run.output_dir + "/checkpoint-4";
  CHECK(train::check_state_files(ck).empty());
  const auto ts = train::read_trainer_state(ck);
  CHECK(ts.state.step == 4);
  CHECK(ts.state.tokens_seen == 4 * 2 * 2 * 16);
  CHECK(train::read_data_state(ck).cursor == 4 * 2 * 2);
  CHECK_FALSE(train::read_scaler_state(ck).enabled);

  util::atomic_write_file(ck / "data.json", R"({"num_samples": 24, "cursor": -1})");
  util::atomic_write_file(ck / "scaler.json", R"({"enabled": true, "scale": 1e999, "growth_tracker": 0})");
  const auto problems = train::check_state_files(ck);
  REQUIRE(problems.size() == 2);
  CHECK_THAT(problems[0], Catch::Matchers::Contains("data.json: cursor is -1, outside [0, "));
  CHECK_THAT(problems[1], Catch::Matchers::Contains("scaler.json") && Catch::Matchers::Contains("number overflow"));
}

TEST_CASE("restoring a finished checkpoint asks for more steps", "[train][ckpt]") {
  test::TempDir d;
  auto cfg = test::resolve("{}", overrides(d, "a", "adamw")).values;
  train::Trainer t(cfg, cfg.run.output_dir);
  t.train();
  train::Trainer again(cfg, cfg.run.output_dir);
  CHECK_THROWS_WITH(again.restore(cfg.run.output_dir + "/checkpoint-8"),
                    Catch::Matchers::Contains("ends training at step 8"));
}

TEST_CASE("a resume reads no data before its position, wherever that is", "[train][ckpt]") {
  // Synchronous loading, so every batch assembled is counted where it happens.
  test::TempDir d;
  auto o = overrides(d, "a", "adamw");
  o.insert(o.end(), {"data.prefetch_batches=0", "trainer.max_steps=12"});
  auto cfg = test::resolve("{}", o).values;
  train::Trainer(cfg, cfg.run.output_dir).train();  // checkpoints at 4, 8, 12
  for (int step : {4, 8}) {
    INFO("from step " << step);
    train::Trainer resumed(cfg, cfg.run.output_dir);
    resumed.restore(cfg.run.output_dir + "/checkpoint-" + std::to_string(step));
    CHECK(resumed.train_loader().batches_produced() == 0);
    CHECK(resumed.train_loader().cursor() == static_cast<uint64_t>(step * 2 * 2));  // steps x accum x micro batch
    resumed.train();
    // Exactly the batches of the remaining steps (x grad_accum_steps), none replayed.
    CHECK(resumed.train_loader().batches_produced() == static_cast<uint64_t>((12 - step) * 2));
  }
}

namespace {

// Checkpoint `from` rewritten into `run` in the layout hftrain wrote before every rank saved its own
// optimizer shard: the whole state in optimizer.safetensors + optimizer.json.
std::filesystem::path to_legacy_layout(const std::filesystem::path& from, const std::filesystem::path& run) {
  const auto report = ckpt::verify_checkpoint(from);
  const auto state = parallel::read_whole_state(*ckpt::open_saved_optimizer(from));
  ckpt::CheckpointWriter w(run, report.manifest->step, util::MapEnvironment());
  for (const auto& f : report.manifest->files) {
    if (f.path.rfind("optimizer/", 0) == 0) continue;
    if (f.tensors.empty()) {
      w.add_bytes(f.path, util::read_file<util::IoError>(from / f.path, "file"));
    } else {  // the manifest records a safetensors file's tensors too
      std::map<std::string, std::string> metadata;
      const auto tensors = model::read_safetensors(from / f.path, &metadata);
      w.add_safetensors(f.path, tensors, metadata);
    }
  }
  w.add_safetensors(ckpt::kLegacyOptimizerTensors, state.tensors);
  w.add_json(ckpt::kLegacyOptimizerMeta, state.meta);
  return w.commit(report.manifest->config_hash, report.manifest->extra);
}

}  // namespace

TEST_CASE("a checkpoint from before per-rank optimizer shards resumes bit for bit", "[train][ckpt]") {
  test::TempDir d;
  auto cfg = test::resolve("{}", overrides(d, "a", "adamw")).values;
  train::Trainer(cfg, cfg.run.output_dir).train();
  const auto legacy = to_legacy_layout(cfg.run.output_dir + "/checkpoint-4", d.path() / "legacy");
  REQUIRE(ckpt::verify_checkpoint(legacy).ok());
  REQUIRE_FALSE(std::filesystem::exists(legacy / "optimizer"));

  auto cfg_b = test::resolve("{}", overrides(d, "b", "adamw")).values;
  train::Trainer resumed(cfg_b, cfg_b.run.output_dir);
  resumed.restore(legacy);
  resumed.train();
  // The same weights and optimizer state at the end, byte for byte (and saved in the new layout).
  for (const std::string f : {"model.safetensors", "optimizer/shard-00000-of-00001.safetensors"}) {
    INFO(f);
    CHECK(util::read_file<util::IoError>(cfg_b.run.output_dir + "/checkpoint-8/" + f, f) ==
          util::read_file<util::IoError>(cfg.run.output_dir + "/checkpoint-8/" + f, f));
  }
}

TEST_CASE("a checkpoint saved in the background holds the bytes of one saved at once, and resumes bit for bit",
          "[train][ckpt][async][slow]") {
  const std::vector<std::vector<std::string>> cases = {
      {},
      {"distributed.strategy=zero2", "distributed.cpu_offload=true"},
      {"distributed.strategy=zero3", "distributed.cpu_offload=true"},
      {"trainer.param_dtype=bf16", "trainer.precision=bf16", "trainer.ema.enabled=true", "trainer.ema.decay=0.8"},
  };
  // Every file but config.yaml (its output_dir and checkpoint.async), environment.json and the
  // manifest (which lists their checksums).
  const std::vector<std::string> files = {"model.safetensors", "optimizer/shard-00000-of-00001.safetensors",
                                          "optimizer/index.json", "scheduler.json", "scaler.json",
                                          "rng.safetensors", "data.json", "trainer_state.json"};
  for (const auto& extra : cases) {
    INFO((extra.empty() ? std::string("adamw") : extra[0]));
    test::TempDir d;
    // Saves after steps 4 and 8 in the background (the second reusing the first's host buffers),
    // 12 at once; keep_last=2 rotates checkpoint-4 away on the publishing thread.
    auto settings = [&](const std::string& run, bool async) {
      auto o = overrides(d, run, "adamw");
      o.insert(o.end(), extra.begin(), extra.end());
      o.insert(o.end(), {"trainer.max_steps=12", "checkpoint.keep_last=2"});
      if (async) o.push_back("checkpoint.async=true");
      return o;
    };
    auto cfg = test::resolve("{}", settings("sync", false)).values;
    train::Trainer sync(cfg, cfg.run.output_dir);
    auto log_sync = std::make_shared<LossLog>();
    sync.add_callback(log_sync);
    sync.train();

    auto cfg_async = test::resolve("{}", settings("async", true)).values;
    train::Trainer async(cfg_async, cfg_async.run.output_dir);
    auto log_async = std::make_shared<LossLog>();
    async.add_callback(log_async);
    auto saves = std::make_shared<SaveLog>();
    async.add_callback(saves);
    const auto r = async.train();
    CHECK(log_async->losses == log_sync->losses);  // saving in the background changes no step
    // Both earlier saves went through the background and were told as of their own step.
    CHECK(saves->background == 2);
    CHECK(saves->steps == std::vector<int64_t>{4, 8, 12});
    REQUIRE(r.last_checkpoint);
    CHECK(r.last_checkpoint->filename() == "checkpoint-12");
    CHECK(util::read_file<util::IoError>(fs::path(cfg_async.run.output_dir) / "latest", "latest") == "checkpoint-12\n");
    CHECK_FALSE(fs::exists(fs::path(cfg_async.run.output_dir) / "checkpoint-4"));  // rotated away
    const fs::path a4 = fs::path(cfg_async.run.output_dir) / "checkpoint-8";
    REQUIRE(ckpt::verify_checkpoint(a4).ok());
    for (const auto& f : files) {
      INFO(f);
      CHECK(util::read_file<util::IoError>(a4 / f, f) ==
            util::read_file<util::IoError>(fs::path(cfg.run.output_dir) / "checkpoint-8" / f, f));
    }
    // No staging folder left behind.
    for (const auto& e : fs::directory_iterator(cfg_async.run.output_dir)) {
      CHECK(e.path().filename().string().rfind(".tmp-", 0) != 0);
    }

    auto cfg_b = test::resolve("{}", settings("b", true)).values;
    train::Trainer resumed(cfg_b, cfg_b.run.output_dir);
    auto log_b = std::make_shared<LossLog>();
    resumed.add_callback(log_b);
    resumed.restore(a4);
    resumed.train();
    REQUIRE(log_b->losses.count(10) == 1);
    CHECK(log_b->losses[10] == log_sync->losses[10]);
    CHECK(log_b->losses[12] == log_sync->losses[12]);
  }
}
