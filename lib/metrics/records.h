// What a logging step and an evaluation report, and their metrics.jsonl records. The trainer
// measures; this stage only formats and writes, so nothing here touches a tensor.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hftrain::metrics {

struct StepMetrics {
  int64_t step = 0;                   // optimizer steps completed
  double epoch = 0;                   // fractional epochs completed
  double loss = 0;                    // mean training loss since the previous logging step
  double lr = 0;                      // learning rate of the first parameter group
  std::optional<double> grad_norm{};  // global gradient norm before clipping; unset: not measured
  int64_t tokens_seen = 0;            // training tokens consumed since the start of the run
  double tokens_per_s = 0;            // over the throughput window, all ranks together
  double step_time_ms = 0;            // mean wall time of one optimizer step
  double data_wait_ms = 0;            // mean time a step waited for its batch
  // Peak memory in MiB: host peak RSS on CPU, the CUDA caching allocator's peak on GPU.
  std::optional<double> peak_mem_mb{};
  // fp16 only: the loss scale after this step, and how many steps of the logging window were
  // skipped because their gradients held inf/NaN.
  std::optional<double> loss_scale{};
  int64_t skipped_steps = 0;
  // More figures by name ("data/<source>/tokens" of a weighted mixture), in this order.
  std::vector<std::pair<std::string, double>> extra{};
};

struct EvalMetrics {
  int64_t step = 0;  // optimizer steps completed when the evaluation ran
  double epoch = 0;
  double eval_loss = 0;  // mean loss per token over the evaluation set
  // More metrics by name ("eval_accuracy", "eval_f1" for classification), in this order.
  std::vector<std::pair<std::string, double>> extra{};
};

// The MFU a step record carries: no field at all on CPU runs (`reported` false); null on GPU when
// the device's peak is unknown.
struct MfuField {
  bool reported = false;
  std::optional<double> value{};
};

// exp(eval_loss); +inf when that overflows (a diverged model).
double perplexity(double loss);

// A step's or an evaluation's figures by name, as every tracker but metrics.jsonl reports them:
// "train/loss", "train/lr", ..., "eval/loss", "eval/ppl" (TensorBoard's tags; '/' groups charts).
struct NamedValue {
  std::string name;
  double value = 0;
};
std::vector<NamedValue> step_values(const StepMetrics& m, std::optional<double> mfu);
std::vector<NamedValue> eval_values(const EvalMetrics& m);

// One-line JSON objects for metrics.jsonl. `wall_time` is seconds since the Unix epoch (the
// "time" field). Non-finite numbers (a NaN loss) are written as null: JSON has no NaN.
std::string step_record_json(const StepMetrics& m, double wall_time, const MfuField& mfu);
std::string eval_record_json(const EvalMetrics& m, double wall_time);

}  // namespace hftrain::metrics
