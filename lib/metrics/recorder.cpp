#include "metrics/recorder.h"

#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "metrics/clock.h"
#include "metrics/format.h"
#include "util/error.h"
#include "util/log.h"

namespace hftrain::metrics {
namespace {

void create_run_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw util::IoError("cannot create run directory " + dir.string() + ": " +
                            (ec ? ec.message() : std::string("a file of that name is in the way")),
                        "choose a run directory on a writable filesystem");
  }
}

std::optional<double> eta_from(int64_t step, int64_t total_steps, double step_time_ms) {
  if (total_steps <= 0 || step_time_ms <= 0) return std::nullopt;
  const int64_t left = total_steps > step ? total_steps - step : 0;
  return static_cast<double>(left) * step_time_ms / 1000.0;
}

std::vector<Scalar> as_scalars(const std::vector<NamedValue>& values) {
  std::vector<Scalar> out;
  out.reserve(values.size());
  for (const auto& v : values) out.push_back({v.name, static_cast<float>(v.value)});
  return out;
}

}  // namespace

Recorder::Recorder(RecorderOptions options) : options_(std::move(options)) {
  if (options_.mfu) mfu_.emplace(*options_.mfu);
  if (options_.jsonl || options_.tensorboard) create_run_dir(options_.run_dir);
  if (options_.jsonl) {
    const auto path = options_.run_dir / kMetricsFileName;
    if (const size_t dropped = drop_records_after(path, options_.start_step); dropped > 0) {
      util::log::info(path.string() + ": dropped " + std::to_string(dropped) + " records after step " +
                      std::to_string(options_.start_step) + " (written by an earlier process)");
    }
    jsonl_.emplace(path, options_.jsonl_options);
  }
  if (options_.tensorboard) {
    tensorboard_.emplace(options_.run_dir, wall_now(), options_.tensorboard_options);
    tensorboard_->add_session_start(options_.start_step + 1, wall_now());
  }
  if (options_.console) progress_.emplace(options_.progress_options);
  progress_state_.total_steps = options_.total_steps;
}

Recorder::~Recorder() = default;

double Recorder::wall_now() const {
  return options_.wall_clock ? options_.wall_clock() : unix_seconds();
}

double Recorder::monotonic_now() const {
  return options_.monotonic_clock ? options_.monotonic_clock() : monotonic_seconds();
}

std::optional<double> Recorder::mfu(double tokens_per_s) const {
  return mfu_ ? mfu_->mfu(tokens_per_s) : std::nullopt;
}

void Recorder::print_line(std::string_view line) {
  if (progress_) {
    progress_->print_above([&] { util::log::info(line); }, progress_state_, monotonic_now());
  } else {
    util::log::info(line);
  }
}

void Recorder::tick(const ThroughputTracker& throughput) {
  if (!progress_) return;
  progress_state_.step = throughput.step();
  progress_state_.tokens_per_s = throughput.tokens_per_s();
  progress_state_.eta_s = throughput.eta_s(options_.total_steps);
  progress_->update(progress_state_, monotonic_now());
}

void Recorder::log_step(const StepMetrics& m) {
  const double now = wall_now();
  const std::optional<double> step_mfu = mfu(m.tokens_per_s);
  const std::optional<double> eta = eta_from(m.step, options_.total_steps, m.step_time_ms);

  // The JSONL record first: it is the one a crash must not lose.
  if (jsonl_) jsonl_->append(step_record_json(m, now, MfuField{mfu_.has_value(), step_mfu}));
  const std::vector<NamedValue> values = step_values(m, step_mfu);
  if (tensorboard_) tensorboard_->add_scalars(m.step, now, as_scalars(values));
  for (const auto& sink : options_.sinks) sink->on_values(m.step, now, values);

  progress_state_.step = m.step;
  progress_state_.loss = m.loss;
  progress_state_.lr = m.lr;
  progress_state_.tokens_per_s = m.tokens_per_s;
  progress_state_.eta_s = eta;
  print_line(format_step_line(m, options_.total_steps, step_mfu, eta));
}

void Recorder::log_eval(const EvalMetrics& m) {
  const double now = wall_now();
  if (jsonl_) jsonl_->append(eval_record_json(m, now));
  const std::vector<NamedValue> values = eval_values(m);
  if (tensorboard_) tensorboard_->add_scalars(m.step, now, as_scalars(values));
  for (const auto& sink : options_.sinks) sink->on_values(m.step, now, values);
  print_line(format_eval_line(m));
}

void Recorder::message(std::string_view line) {
  print_line(line);
}

}  // namespace hftrain::metrics
