#include "train/state/checkpoint_state.h"

#include <cmath>
#include <functional>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "train/state/checkpoint_fields.h"
#include "util/error.h"
#include "util/strings.h"

namespace hftrain::train {
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

const char* const kDamaged = "the file is damaged; resume from another checkpoint";

int64_t cpu_generator_state_size() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state().numel();
}

// The CPU generator's states: the default one's, and tensor parallelism's own stream ("tp_cpu").
bool is_cpu_state(const std::string& name) {
  return name == "cpu" || name.rfind("cpu.rank", 0) == 0 || name == "tp_cpu" || name.rfind("tp_cpu.rank", 0) == 0;
}

}  // namespace

namespace {
Json optional_number(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }
}  // namespace

Json trainer_state_record(const SavedTrainerState& s) {
  const TrainState& t = s.state;
  Json ts;
  ts["step"] = t.step;
  ts["total_steps"] = t.total_steps;
  ts["epoch"] = t.epoch;
  ts["tokens_seen"] = t.tokens_seen;
  if (s.source_tokens) {
    // By source name, so that a resume matches counts to sources, not to positions.
    Json counts = Json::object();
    for (const auto& [name, count] : *s.source_tokens) counts[name] = count;
    ts["source_tokens"] = counts;
  }
  ts["best_eval_loss"] = optional_number(t.best_eval_loss);
  ts["best_step"] = t.best_step;
  ts["last_eval_loss"] = optional_number(t.last_eval_loss);
  ts["last_eval_step"] = t.last_eval_step;
  ts["early_stopping_best"] = optional_number(t.early_stopping_best);
  ts["early_stopping_bad"] = t.early_stopping_bad;
  // The running loss of the logging window: a float32 sum, exact in a double.
  ts["window_loss_sum"] = s.window_loss_sum;
  ts["window_targets"] = s.window_targets;
  if (s.divergence) ts["divergence"] = {{"recent", s.divergence->recent}, {"consecutive", s.divergence->consecutive}};
  return ts;
}

Json data_state_record(const SavedDataState& s) {
  return {{"cursor", s.cursor},   {"epoch", s.epoch},           {"seed", s.seed},
          {"num_samples", s.num_samples}, {"batch_size", s.batch_size}, {"document_mask", s.document_mask}};
}

Json scheduler_record(int64_t step, const std::optional<SavedPlateau>& plateau) {
  Json scheduler = {{"name", plateau ? "reduce_lr_on_plateau" : "stateless"}, {"step", step}};
  if (plateau) {
    scheduler["plateau"] = {{"factor", plateau->factor}, {"best", optional_number(plateau->best)},
                            {"num_bad", plateau->num_bad}, {"cooldown_left", plateau->cooldown_left}};
  }
  return scheduler;
}

Json scaler_record(const SavedScaler& s) {
  return {{"enabled", s.enabled}, {"scale", s.scale}, {"growth_tracker", s.growth_tracker}};
}

SavedTrainerState read_trainer_state(const fs::path& checkpoint) {
  const fs::path file = checkpoint / kTrainerStateFile;
  const Json ts = read_json(file);
  SavedTrainerState s;
  TrainState& t = s.state;
  t.step = count_field(ts, "step", file);
  if (ts.contains("total_steps")) t.total_steps = count_field(ts, "total_steps", file);
  t.epoch = real_field(ts, "epoch", file, 0.0, 1e15);
  t.tokens_seen = count_field(ts, "tokens_seen", file);
  if (ts.contains("source_tokens")) {
    const Json& counts = ts["source_tokens"];
    if (!counts.is_object()) {
      throw util::CheckpointError(file.string() + ": `source_tokens` is not a map of source names to token counts",
                                  kDamaged);
    }
    s.source_tokens.emplace();
    for (auto it = counts.begin(); it != counts.end(); ++it) {
      if (!it->is_number_integer() || (it->is_number_unsigned() && it->get<uint64_t>() > kMaxCheckpointCount) ||
          it->get<int64_t>() < 0 || it->get<int64_t>() > kMaxCheckpointCount) {
        throw util::CheckpointError(file.string() + ": `source_tokens` holds " + util::clip(it->dump(), 40) + " for " +
                                        util::clip(it.key(), 100) + ", not a token count",
                                    kDamaged);
      }
      (*s.source_tokens)[it.key()] = it->get<int64_t>();
    }
  }
  t.best_eval_loss = optional_field(ts, "best_eval_loss", file);
  t.best_step = count_field(ts, "best_step", file);
  t.last_eval_loss = optional_field(ts, "last_eval_loss", file);
  t.last_eval_step = count_field(ts, "last_eval_step", file);
  t.early_stopping_best = optional_field(ts, "early_stopping_best", file);
  t.early_stopping_bad = count_field(ts, "early_stopping_bad", file);
  s.window_loss_sum = real_field(ts, "window_loss_sum", file, -1e30, 1e30);
  s.window_targets = count_field(ts, "window_targets", file);
  if (ts.contains("divergence")) {
    const Json& d = ts["divergence"];
    if (!d.is_object() || !d.contains("recent") || !d["recent"].is_array()) {
      throw util::CheckpointError(file.string() + ": `divergence` is not an object with a `recent` list of losses",
                                  kDamaged);
    }
    DivergenceJudge::State judge;
    for (const Json& loss : d["recent"]) {
      if (!loss.is_number() || !std::isfinite(loss.get<double>())) {
        throw util::CheckpointError(file.string() + ": `divergence.recent` holds " + util::clip(loss.dump(), 40) +
                                        ", not a finite loss",
                                    kDamaged);
      }
      judge.recent.push_back(loss.get<double>());
    }
    judge.consecutive = count_field(d, "consecutive", file);
    s.divergence = std::move(judge);
  }
  return s;
}

SavedDataState read_data_state(const fs::path& checkpoint) {
  const fs::path file = checkpoint / kDataFile;
  const Json data = read_json(file);
  SavedDataState s;
  s.num_samples = count_field(data, "num_samples", file);
  s.cursor = count_field(data, "cursor", file);
  if (data.contains("document_mask")) s.document_mask = field<bool>(data, "document_mask", file);
  if (data.contains("epoch")) s.epoch = count_field(data, "epoch", file);
  if (data.contains("seed")) s.seed = field<int64_t>(data, "seed", file);
  if (data.contains("batch_size")) s.batch_size = count_field(data, "batch_size", file);
  return s;
}

std::optional<SavedPlateau> read_plateau_state(const fs::path& checkpoint) {
  const fs::path file = checkpoint / kSchedulerFile;
  const Json sched = read_json(file);
  if (!sched.contains("plateau")) return std::nullopt;
  const Json& p = sched.at("plateau");
  if (!p.is_object()) throw util::CheckpointError(file.string() + ": `plateau` is not an object", kDamaged);
  if (!p.contains("best")) field<double>(p, "best", file);  // the missing-key message
  return SavedPlateau{real_field(p, "factor", file, 0.0, 1e6), optional_field(p, "best", file),
                      count_field(p, "num_bad", file), count_field(p, "cooldown_left", file)};
}

SavedScaler read_scaler_state(const fs::path& checkpoint) {
  const fs::path file = checkpoint / kScalerFile;
  const Json sc = read_json(file);
  SavedScaler s;
  s.enabled = field<bool>(sc, "enabled", file);
  if (s.enabled) {
    s.scale = real_field(sc, "scale", file, 1e-30, 1e30);
    s.growth_tracker = count_field(sc, "growth_tracker", file);
  }
  return s;
}

model::TensorList read_rng_states(const fs::path& checkpoint) {
  const fs::path file = checkpoint / kRngFile;
  model::TensorList states = model::read_safetensors(file);
  bool cpu = false;
  const int64_t cpu_size = cpu_generator_state_size();
  for (const auto& [name, state] : states) {
    const bool is_cpu = is_cpu_state(name);
    cpu = cpu || name == "cpu";
    if (state.scalar_type() != torch::kUInt8 || state.dim() != 1 || (is_cpu && state.numel() != cpu_size)) {
      throw util::CheckpointError(
          file.string() + ": the `" + util::clip(name, 100) + "` generator state is " +
              std::string(c10::toString(state.scalar_type())) + " of " + std::to_string(state.numel()) +
              " elements; this build's is uint8" + (is_cpu ? " of " + std::to_string(cpu_size) : std::string()),
          "the checkpoint is damaged or from another LibTorch; resume from another one");
    }
  }
  if (!cpu) throw util::CheckpointError(file.string() + " has no `cpu` generator state", "the checkpoint is damaged");
  return states;
}

std::vector<std::string> check_state_files(const fs::path& checkpoint) {
  std::vector<std::string> problems;
  const std::vector<std::function<void()>> reads = {
      [&] { read_data_state(checkpoint); }, [&] { read_rng_states(checkpoint); },
      [&] { read_scaler_state(checkpoint); }, [&] { read_plateau_state(checkpoint); },
      [&] { read_trainer_state(checkpoint); }};
  for (const auto& read : reads) {
    try {
      read();
    } catch (const util::Error& e) {
      problems.push_back(e.what());
    }
  }
  return problems;
}

}  // namespace hftrain::train
