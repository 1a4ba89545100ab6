#include "train/report/metrics_callback.h"

#include "metrics/clock.h"

namespace hftrain::train {

MetricsCallback::MetricsCallback(metrics::RecorderOptions options) : recorder_(std::move(options)) {}

void MetricsCallback::on_train_begin(TrainState& state) {
  throughput_.start(metrics::monotonic_seconds(), state.step, state.tokens_seen);
  wait_recorded_ = state.data_wait_s;
}

void MetricsCallback::on_step_end(TrainState& state) {
  throughput_.record(metrics::monotonic_seconds(), state.step, state.tokens_seen, state.data_wait_s - wait_recorded_);
  wait_recorded_ = state.data_wait_s;
  recorder_.tick(throughput_);
}

void MetricsCallback::on_log(TrainState& state, const StepStats& stats) {
  metrics::StepMetrics m;
  m.step = state.step;
  m.epoch = state.epoch;
  m.loss = stats.loss;
  m.lr = stats.lr;
  m.grad_norm = stats.grad_norm;
  m.tokens_seen = state.tokens_seen;
  m.tokens_per_s = throughput_.tokens_per_s();
  m.step_time_ms = throughput_.step_time_ms();
  m.data_wait_ms = throughput_.data_wait_ms();
  m.peak_mem_mb = stats.peak_mem_mb;
  m.loss_scale = stats.loss_scale;
  m.skipped_steps = stats.skipped_steps;
  m.extra = stats.extra;
  recorder_.log_step(m);
}

void MetricsCallback::on_evaluate(TrainState& state, double eval_loss) {
  recorder_.log_eval(metrics::EvalMetrics{state.step, state.epoch, eval_loss, state.last_eval_metrics});
}

void MetricsCallback::on_message(TrainState&, const std::string& line) { recorder_.message(line); }

}  // namespace hftrain::train
