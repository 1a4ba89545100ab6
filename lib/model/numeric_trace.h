// debug.underflow_overflow, as the Hugging Face Trainer's debug="underflow_overflow": what the
// decoder's modules saw in the forward (the abs-min and abs-max of each one's input, its weights
// and its output), the last frames kept. The first inf or NaN ends the forward: the frames are
// logged and util::DivergedError names the module. The trainer installs one trace for the run;
// the modules report to it through numeric_trace(), which is null when it is off (one branch per
// module, no other cost).
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include <torch/nn/module.h>
#include <torch/types.h>

namespace hftrain::model {

class NumericTrace {
 public:
  explicit NumericTrace(size_t max_frames) : max_frames_(max_frames) {}

  // One module's forward: `name` as the model names its parameters ("layers.3.attn"), its input,
  // the parameters of `module` (recursively; null: none of its own) and its output. Throws
  // util::DivergedError after recording when any of them holds an inf or NaN.
  void record(const std::string& name, const torch::nn::Module* module, const torch::Tensor& input,
              const torch::Tensor& output);
  // The frames kept, oldest first, one block of lines each.
  std::string frames() const;
  void set_step(int64_t step) { step_ = step; }

 private:
  struct Value {
    std::string what;  // "input", "output", or a weight's name
    double abs_min = 0, abs_max = 0;
  };
  struct Frame {
    std::string name;
    int64_t step = 0;
    std::vector<Value> values;
  };
  size_t max_frames_;
  int64_t step_ = 0;
  std::deque<Frame> frames_;
};

// Whether `t` has elements that can be read: a sharding strategy (zero3) frees a parameter's
// storage between its uses, leaving its sizes.
bool readable(const torch::Tensor& t);

// The trace the modules report to, or null (process-wide: a checkpointed block's recomputation
// runs on autograd's threads).
NumericTrace* numeric_trace();
void set_numeric_trace(NumericTrace* trace);

// Installs a trace of `max_frames` for its scope (and none after it).
class NumericTraceScope {
 public:
  explicit NumericTraceScope(size_t max_frames) : trace_(max_frames) { set_numeric_trace(&trace_); }
  ~NumericTraceScope() { set_numeric_trace(nullptr); }
  NumericTraceScope(const NumericTraceScope&) = delete;
  NumericTraceScope& operator=(const NumericTraceScope&) = delete;
  NumericTrace& trace() { return trace_; }

 private:
  NumericTrace trace_;
};

// `output` after recording it as module `name`'s (see NumericTrace::record); `output` alone when
// no trace is installed.
inline torch::Tensor traced(const char* name, const torch::nn::Module* module, const torch::Tensor& input,
                            const torch::Tensor& output) {
  if (NumericTrace* trace = numeric_trace()) trace->record(name, module, input, output);
  return output;
}

}  // namespace hftrain::model
