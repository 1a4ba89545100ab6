#include "train_job.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <csignal>
#include <iostream>
#include <stdexcept>

#include "ckpt/layout.h"
#include "config/schema.h"
#include "parallel/plan/memory_plan.h"
#include "parallel/comm/world.h"
#include "launch/launch_env.h"
#include "launch/restarts.h"
#include "train/task/adapter_model.h"
#include "train/build/wiring.h"
#include "util/env.h"
#include "ckpt/resume_policy.h"
#include "config/emit.h"
#include "model/hf/hf_export.h"
#include "model/weights/saved_model.h"
#include "train/build/pipeline_setup.h"
#include "train/report/run_summary.h"
#include "metrics/mlflow_tracker.h"
#include "train/build/tp_setup.h"
#include "train/step/fault_injection.h"
#include "train/trainer.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/log.h"

namespace hftrain::app {
namespace {

std::atomic<int> g_stop_signal{0};  // written by the signal handler only
extern "C" void on_stop_signal(int sig) { g_stop_signal.store(sig); }

util::log::Level log_level(config::LogLevel level) {
  switch (level) {
    case config::LogLevel::kDebug: return util::log::Level::kDebug;
    case config::LogLevel::kInfo: return util::log::Level::kInfo;
    case config::LogLevel::kWarn: return util::log::Level::kWarn;
    case config::LogLevel::kError: return util::log::Level::kError;
  }
  return util::log::Level::kInfo;
}

// Detaches the log file however the job ends.
struct LogFileScope {
  explicit LogFileScope(const std::filesystem::path& path) { util::log::set_file(path.string()); }
  ~LogFileScope() { util::log::set_file(""); }
};

int signal_exit_code(const config::Config& cfg, int signal) {
  return cfg.checkpoint.signal_exit_code ? static_cast<int>(*cfg.checkpoint.signal_exit_code) : 128 + signal;
}

int train_with(const TrainJob& job, parallel::World& world, const std::filesystem::path& run_dir,
               const torch::Device& device);

}  // namespace

std::vector<std::string> plan_resume(const ckpt::LocatedCheckpoint& checkpoint, const config::ResolvedConfig& now,
                                     bool force) {
  // The checkpoint's config alone, without this shell's environment: what the saved run used.
  const util::MapEnvironment no_env;
  config::ResolveOptions saved_options;
  saved_options.checkpoint_config = checkpoint.dir / "config.yaml";
  saved_options.env = &no_env;
  const config::ResolvedConfig saved = config::resolve_config(saved_options);
  const auto changes = ckpt::diff_configs(saved.values, now.values, now.tree);
  std::vector<std::string> notes = {"resuming from " + checkpoint.dir.string() + " (step " +
                                    std::to_string(checkpoint.step) + ")"};
  for (const auto& s : checkpoint.skipped) notes.push_back(s);
  const ckpt::ResumePlan plan = ckpt::check_resume_changes(changes, force, checkpoint.dir.string());
  notes.insert(notes.end(), plan.notes.begin(), plan.notes.end());
  return notes;
}

std::optional<ckpt::RunDirLock> lock_run_dir(const std::filesystem::path& run_dir, int node_rank) {
  const launch::LaunchEnv env = launch::detect_launch_env(util::Environment::process());
  const bool follower = env.launcher == launch::Launcher::kHftrain || env.rank != 0;
  if (follower || node_rank != 0) return std::nullopt;
  return ckpt::RunDirLock::acquire(run_dir);
}

void remove_earlier_run(const std::filesystem::path& run_dir) {
  namespace fs = std::filesystem;
  std::vector<fs::path> doomed;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (ckpt::parse_checkpoint_step(name) || name.rfind(".tmp-checkpoint-", 0) == 0 || name == ckpt::kLatestFile ||
        name == "final" || name == "metrics.jsonl" || name.find("tfevents") != std::string::npos ||
        name == launch::kFailuresDir || name == train::kRunStatusFile || name == metrics::kMlflowRunFile ||
        name == metrics::kMlflowPendingFile) {
      doomed.push_back(e.path());
    }
  }
  for (const auto& p : doomed) {
    fs::remove_all(p, ec);
    if (ec) throw util::IoError("cannot remove " + p.string() + ": " + ec.message(), "check its permissions");
  }
  util::log::info("removed " + std::to_string(doomed.size()) + " entries of the earlier run in " + run_dir.string());
}

std::vector<int> stop_exit_codes(const config::Config& cfg) {
  if (cfg.checkpoint.signal_exit_code) return {static_cast<int>(*cfg.checkpoint.signal_exit_code)};
  return {128 + SIGINT, 128 + SIGTERM};
}

std::string config_hash(const config::ResolvedConfig& resolved) {
  return util::hash_hex(config::to_yaml(resolved, config::product_schema(), /*provenance=*/false));
}

namespace {

const char* kind_name(util::ErrorKind kind) {
  switch (kind) {
    case util::ErrorKind::kUsage: return "usage";
    case util::ErrorKind::kConfig: return "config";
    case util::ErrorKind::kData: return "data";
    case util::ErrorKind::kCheckpoint: return "checkpoint";
    case util::ErrorKind::kIo: return "io";
    case util::ErrorKind::kDistributed: return "distributed";
    case util::ErrorKind::kDiverged: return "diverged";
  }
  return "internal";
}

// Why this process stopped, for a supervisor deciding about a restart and for `hftrain runs`.
void record_failure(const TrainJob& job, const std::string& kind, int exit_code, const std::string& message) {
  launch::FailureRecord r;
  r.rank = launch::detect_launch_env(util::Environment::process()).rank;
  r.kind = kind;
  r.exit_code = exit_code;
  r.message = message;
  r.attempt = std::atoi(util::Environment::process().get("HFTRAIN_RESTART_COUNT").value_or("0").c_str());
  r.time = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  launch::write_failure_record(job.resolved.values.run.output_dir, r);
}

int run_train_job_unrecorded(const TrainJob& job);

}  // namespace

int run_train_job(const TrainJob& job) {
  try {
    return run_train_job_unrecorded(job);
  } catch (const util::Error& e) {
    record_failure(job, kind_name(e.kind()), e.exit_code(), e.describe());
    throw;
  } catch (const std::exception& e) {
    record_failure(job, "internal", util::kExitFailure, std::string("error: ") + e.what());
    throw;
  }
}

namespace {

int run_train_job_unrecorded(const TrainJob& job) {
  const config::Schema& schema = config::product_schema();
  const config::Config& cfg = job.resolved.values;
  util::log::set_level(log_level(cfg.logging.level));

  // Where this process sits in the job (one process, or a rank under a launcher or mpirun).
  const launch::LaunchEnv env = launch::detect_launch_env(util::Environment::process());
  const bool main_rank = env.rank == 0;
  if (env.distributed()) {
    // hftrain's launcher prefixes each worker's lines itself; under mpirun or srun we do.
    if (env.launcher != launch::Launcher::kHftrain) util::log::set_tag("[rank " + std::to_string(env.rank) + "] ");
    if (!main_rank) util::log::set_console_level(util::log::Level::kWarn);  // rank 0 speaks for the job
  }
  const std::filesystem::path run_dir = cfg.run.output_dir;
  if (main_rank) config::write_resolved_config(job.resolved, schema, run_dir);
  std::filesystem::create_directories(run_dir);
  LogFileScope log_file(run_dir /
                        (main_rank ? std::string("train.log") : "train-rank" + std::to_string(env.rank) + ".log"));
  if (main_rank) util::log::info("run " + cfg.run.name + ": config written to " + (run_dir / "config.yaml").string());
  for (const auto& note : job.resume_notes) util::log::info(note);
  if (main_rank) ckpt::remove_stale_staging(run_dir);  // what a crash in an earlier save left behind

  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  const torch::Device device = train::pick_device(cfg, env.local_rank);
  // A layout that cannot run stops here, before any rank waits for another.
  const std::optional<model::ModelSpec> decoder = train::decoder_spec(cfg);
  train::check_tensor_parallel(cfg, decoder ? &*decoder : nullptr);
  train::check_pipeline_parallel(cfg, decoder ? &*decoder : nullptr);
  parallel::World::check_mesh(env, cfg.distributed);
  std::unique_ptr<parallel::World> world = parallel::World::create(env, cfg.distributed, device);
  if (env.distributed()) {
    util::log::info("distributed: " + std::to_string(env.world_size) + " ranks (" + env.describe() + "), backend " +
                    world->comm().backend() + ", strategy " + parallel::strategy_name(cfg.distributed.strategy));
  }
  try {
    return train_with(job, *world, run_dir, device);
  } catch (const util::DistributedError&) {
    world->mark_broken();  // a collective may be stuck: no orderly shutdown
    throw;
  }
}

// Rank 0's status.json (train/report/run_summary.h), for `hftrain runs` and `hftrain sweep`.
class RunStatus {
 public:
  RunStatus(const std::filesystem::path& run_dir, bool main) : run_dir_(run_dir), main_(main) {}
  void start(const train::Trainer& trainer, bool resuming) {
    if (!main_) return;
    record_ = train::starting_status(run_dir_, resuming, trainer.state().step, trainer.state().total_steps);
    train::write_run_status(run_dir_, *record_);
  }
  void end(const train::Trainer& trainer, const char* status, const std::string& error = {}) {
    if (!record_) return;
    record_->status = status;
    record_->ended_at = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    record_->step = trainer.state().step;
    record_->error = error;
    train::write_run_status(run_dir_, *record_);
    record_.reset();
  }

 private:
  std::filesystem::path run_dir_;
  bool main_;
  std::optional<train::RunStatusRecord> record_;
};

int train_and_save(const TrainJob& job, train::Trainer& trainer, parallel::World& world,
                   const std::filesystem::path& run_dir, RunStatus& status);

int train_with(const TrainJob& job, parallel::World& world, const std::filesystem::path& run_dir,
               const torch::Device& device) {
  static_cast<void>(device);
  train::Trainer trainer(job.resolved.values, run_dir, &g_stop_signal, /*resume_from=*/job.resume_from, &world);
  if (auto faults = train::make_test_faults(world.rank()))
    trainer.add_step_hooks(std::move(faults));  // HFTRAIN_TEST_FAULT
  RunStatus status(run_dir, world.is_main());
  // The trackers hear how the run ended (train/report/tracking.h): its status, the final model.
  try {
    return train_and_save(job, trainer, world, run_dir, status);
  } catch (const util::Error& e) {
    status.end(trainer, "failed", e.describe());
    trainer.end_run({train::RunEnd::Status::kFailed, std::nullopt, e.describe()});
    throw;
  } catch (const std::exception& e) {
    status.end(trainer, "failed", std::string("error: ") + e.what());
    trainer.end_run({train::RunEnd::Status::kFailed, std::nullopt, std::string("error: ") + e.what()});
    throw;
  }
}

int train_and_save(const TrainJob& job, train::Trainer& trainer, parallel::World& world,
                   const std::filesystem::path& run_dir, RunStatus& status) {
  const config::Schema& schema = config::product_schema();
  const config::Config& cfg = job.resolved.values;
  trainer.set_run_record(
      {config::resolved_config_text(job.resolved, schema), config_hash(job.resolved), job.command_line});
  status.start(trainer, job.resume_from.has_value());  // before restore: a resume that fails there says so
  if (job.resume_from) trainer.restore(*job.resume_from, job.force);
  train::TrainResult result = trainer.train();
  if (result.run_dir_lost) {
    // Nothing more goes into a directory that is not the one the run started with.
    if (!world.is_main()) return util::kExitFailure;
    const int64_t step = result.state.step;
    const bool saved = result.last_checkpoint && result.last_checkpoint->filename() == ckpt::checkpoint_dir_name(step);
    throw util::IoError(
        "the run directory " + run_dir.string() + " was deleted or moved while training (noticed after step " +
            std::to_string(step) + "); the metrics, logs and checkpoints written before went with it",
        saved ? "a checkpoint of step " + std::to_string(step) + " is in " + result.last_checkpoint->string() +
                    ": continue with `hftrain resume " + run_dir.string() + "`"
              : "the checkpoint of step " + std::to_string(step) +
                    " could not be saved either; "
                    "restore the directory and resume from its last checkpoint");
  }

  // A user callback failed: the loop stopped with the usual checkpoint; the run fails with its message.
  if (!result.state.callback_failure.empty()) throw std::runtime_error(result.state.callback_failure);
  const auto final_dir = run_dir / "final";
  if (!result.interrupted) trainer.load_best_model();  // trainer.load_best_model_at_end
  trainer.save_model(final_dir);  // every rank: under zero3 the parameters are gathered for rank 0
  const train::RunEnd::Status ended =
      result.interrupted ? train::RunEnd::Status::kInterrupted : train::RunEnd::Status::kFinished;
  if (!world.is_main()) return result.interrupted ? signal_exit_code(cfg, result.signal) : util::kExitOk;
  std::string summary = "trained to step " + std::to_string(result.state.step) + ", last loss " +
                        std::to_string(result.last_loss);
  if (result.state.best_eval_loss) summary += ", best eval loss " + std::to_string(*result.state.best_eval_loss);
  if (result.unigram_baseline) summary += " (unigram baseline " + std::to_string(*result.unigram_baseline) + ")";
  util::log::info(summary + "; model saved to " + final_dir.string());
  if (cfg.run.export_hf && cfg.model.arch == config::ModelArch::kBert) {
    util::log::info("run.export_hf: " + final_dir.string() + " is already in the Hugging Face layout (a classifier's "
                    "model directory is config.json, safetensors and tokenizer.json)");
  } else if (cfg.run.export_hf) {
    const auto hf_dir = run_dir / "final-hf";
    // A LoRA run's final/ holds adapters: exported merged into the base.
    model::export_hf(train::is_adapter_dir(final_dir) ? train::load_adapter_model(final_dir, /*merge=*/true)
                                                      : model::load_model_dir(final_dir),
                     hf_dir, cfg.checkpoint.shard_size);
    util::log::info("run.export_hf: the final model in the Hugging Face layout is in " + hf_dir.string());
  }
  // The callbacks' end first (command callbacks run and are waited for): a required one that
  // failed fails the run.
  trainer.end_run({ended, final_dir, {}});
  if (!trainer.state().callback_failure.empty()) throw std::runtime_error(trainer.state().callback_failure);
  status.end(trainer, result.interrupted ? "interrupted" : "finished");
  if (result.last_checkpoint) std::cout << "checkpoint: " << result.last_checkpoint->string() << "\n";
  std::cout << "model: " << final_dir.string() << "\n";
  return result.interrupted ? signal_exit_code(cfg, result.signal) : util::kExitOk;
}

}  // namespace

}  // namespace hftrain::app
