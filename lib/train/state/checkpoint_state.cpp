#include "train/state/checkpoint_state.h"

#include <cmath>
#include <functional>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "train/state/checkpoint_fields.h"
#include "util/error.h"
#include "util/strings.h"

namespace hftrain::train {
namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

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
Json optional_number(const std::optional<double>& v) {
  return v ? Json(*v) : Json(nullptr);
}
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
  ts["best_metric"] = optional_number(t.best_metric);
  ts["best_metric_name"] = t.best_metric_name;
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
  return {{"cursor", s.cursor},           {"epoch", s.epoch},           {"seed", s.seed},
          {"num_samples", s.num_samples}, {"batch_size", s.batch_size}, {"document_mask", s.document_mask}};
}

Json scheduler_record(int64_t step, const std::optional<SavedPlateau>& plateau) {
  Json scheduler = {{"name", plateau ? "reduce_lr_on_plateau" : "stateless"}, {"step", step}};
  if (plateau) {
    scheduler["plateau"] = {{"factor", plateau->factor},
                            {"best", optional_number(plateau->best)},
                            {"num_bad", plateau->num_bad},
                            {"cooldown_left", plateau->cooldown_left}};
  }
  return scheduler;
}

Json scaler_record(const SavedScaler& s) {
  return {{"enabled", s.enabled}, {"scale", s.scale}, {"growth_tracker", s.growth_tracker}};
}

SavedTrainerState read_trainer_state(const fs::path& checkpoint) {
  const CheckpointFile file(checkpoint / kTrainerStateFile);
  const util::JsonFields& ts = file.fields();
  SavedTrainerState s;
  TrainState& t = s.state;
  t.step = count(ts, "step");
  if (ts.has("total_steps")) t.total_steps = count(ts, "total_steps");
  t.epoch = ts.number("epoch", 0.0, 1e15);
  t.tokens_seen = count(ts, "tokens_seen");
  if (ts.has("source_tokens")) {  // source name -> token count
    const util::JsonFields counts = ts.object("source_tokens");
    s.source_tokens.emplace();
    for (const auto& [name, value] : counts.json().items()) {
      (*s.source_tokens)[name] = util::json_int(value, counts.at(name), 0, kMaxCheckpointCount);
    }
  }
  t.best_eval_loss = ts.optional_number("best_eval_loss", -kMaxCheckpointReal, kMaxCheckpointReal);
  t.best_step = count(ts, "best_step");
  if (ts.has("best_metric_name")) {
    t.best_metric = ts.optional_number("best_metric", -kMaxCheckpointReal, kMaxCheckpointReal);
    t.best_metric_name = ts.string("best_metric_name");
  } else {  // saved before trainer.metric_for_best_model: the best was the eval loss's
    t.best_metric = t.best_eval_loss;
    t.best_metric_name = "eval_loss";
  }
  t.last_eval_loss = ts.optional_number("last_eval_loss", -kMaxCheckpointReal, kMaxCheckpointReal);
  t.last_eval_step = count(ts, "last_eval_step");
  t.early_stopping_best = ts.optional_number("early_stopping_best", -kMaxCheckpointReal, kMaxCheckpointReal);
  t.early_stopping_bad = count(ts, "early_stopping_bad");
  s.window_loss_sum = ts.number("window_loss_sum", -kMaxCheckpointReal, kMaxCheckpointReal);
  s.window_targets = count(ts, "window_targets");
  if (ts.has("divergence")) {  // {"recent": [losses], "consecutive": n}
    const util::JsonFields d = ts.object("divergence");
    DivergenceJudge::State judge;
    const Json& recent = d.array("recent");
    for (size_t i = 0; i < recent.size(); ++i) {
      judge.recent.push_back(util::json_number(recent[i], d.at("recent")[i], -kMaxCheckpointReal, kMaxCheckpointReal));
    }
    judge.consecutive = count(d, "consecutive");
    s.divergence = std::move(judge);
  }
  return s;
}

SavedDataState read_data_state(const fs::path& checkpoint) {
  const CheckpointFile file(checkpoint / kDataFile);
  const util::JsonFields& data = file.fields();
  SavedDataState s;
  s.num_samples = count(data, "num_samples");
  s.cursor = count(data, "cursor");
  if (data.has("document_mask")) s.document_mask = data.boolean("document_mask");
  if (data.has("epoch")) s.epoch = count(data, "epoch");
  if (data.has("seed")) s.seed = data.integer("seed");
  if (data.has("batch_size")) s.batch_size = count(data, "batch_size");
  return s;
}

std::optional<SavedPlateau> read_plateau_state(const fs::path& checkpoint) {
  const CheckpointFile file(checkpoint / kSchedulerFile);
  if (!file.fields().has("plateau")) return std::nullopt;
  const util::JsonFields p = file.fields().object("plateau");
  if (!p.json().contains("best")) p.require("best");  // present, null when there was none yet
  return SavedPlateau{p.number("factor", 0.0, 1e6), p.optional_number("best", -kMaxCheckpointReal, kMaxCheckpointReal),
                      count(p, "num_bad"), count(p, "cooldown_left")};
}

SavedScaler read_scaler_state(const fs::path& checkpoint) {
  const CheckpointFile file(checkpoint / kScalerFile);
  const util::JsonFields& sc = file.fields();
  SavedScaler s;
  s.enabled = sc.boolean("enabled");
  if (s.enabled) {
    s.scale = sc.number("scale", 1e-30, kMaxCheckpointReal);
    s.growth_tracker = count(sc, "growth_tracker");
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
      throw util::CheckpointError(file.string() + ": the `" + util::clip(name, 100) + "` generator state is " +
                                      std::string(c10::toString(state.scalar_type())) + " of " +
                                      std::to_string(state.numel()) + " elements; this build's is uint8" +
                                      (is_cpu ? " of " + std::to_string(cpu_size) : std::string()),
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
