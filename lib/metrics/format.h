// Human-readable renderings of the metrics: the text log lines and the pieces of the progress
// line. Pure functions of their inputs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "metrics/records.h"

namespace hftrain::metrics {

// "42s", "3m05s", "1h02m", "2d03h"; "?" for a negative or non-finite value.
std::string format_duration(double seconds);
// Three significant figures with an SI suffix: "950", "12.3k", "1.23M", "4.56G".
std::string format_si(double value);
// printf-style "%.*g"-like rendering that keeps "nan"/"inf" readable.
std::string format_number(double value, int significant = 4);

// The text-log line of a logging step, e.g.
// "step 120/1000 | epoch 0.12 | loss 2.3456 | lr 3.000e-04 | grad_norm 0.8123 | 12.3k tok/s |
//  250.1 ms/step | data 1.2 ms | mem 1234 MiB | mfu 41.2% | eta 3m40s"
// `total_steps` 0 leaves the total out; fields without a value are left out.
std::string format_step_line(const StepMetrics& m, int64_t total_steps, std::optional<double> mfu,
                             std::optional<double> eta_s);
// "eval step 120 | epoch 0.12 | eval_loss 2.4000 | eval_ppl 11.02"
std::string format_eval_line(const EvalMetrics& m);

}  // namespace hftrain::metrics
