#include "model/numeric_trace.h"

#include <atomic>
#include <cmath>
#include <cstdio>

#include <torch/torch.h>

#include "util/error.h"
#include "util/log.h"

namespace hftrain::model {
namespace {

std::atomic<NumericTrace*> g_trace{nullptr};

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3e", v);
  return buf;
}

}  // namespace

bool readable(const torch::Tensor& t) {
  return t.defined() && t.numel() > 0 && t.has_storage() &&
         t.storage().nbytes() >= static_cast<size_t>((t.storage_offset() + t.numel()) * t.element_size());
}

NumericTrace* numeric_trace() { return g_trace.load(std::memory_order_relaxed); }

void set_numeric_trace(NumericTrace* trace) { g_trace.store(trace, std::memory_order_relaxed); }

void NumericTrace::record(const std::string& name, const torch::nn::Module* module, const torch::Tensor& input,
                          const torch::Tensor& output) {
  torch::NoGradGuard no_grad;
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  if (readable(input)) tensors.emplace_back("input", input);
  if (module) {
    for (const auto& item : module->named_parameters(/*recurse=*/true)) {
      if (readable(item.value())) tensors.emplace_back(item.key(), item.value());
    }
  }
  if (readable(output)) tensors.emplace_back("output", output);
  if (tensors.empty()) return;
  // Every tensor's abs-min and abs-max (in its own dtype), then all of them in one read.
  std::vector<torch::Tensor> extremes;
  for (const auto& [what, t] : tensors) {
    const auto [lo, hi] = torch::aminmax(t.detach().abs());
    extremes.push_back(lo.to(torch::kFloat64).reshape({1}));
    extremes.push_back(hi.to(torch::kFloat64).reshape({1}));
  }
  const torch::Tensor host = torch::cat(extremes).to(torch::kCPU).contiguous();
  const double* v = host.data_ptr<double>();
  Frame frame{name, step_, {}};
  const Value* first_bad = nullptr;
  for (size_t i = 0; i < tensors.size(); ++i) {
    frame.values.push_back({tensors[i].first, v[2 * i], v[2 * i + 1]});
  }
  for (const Value& value : frame.values) {
    if (!std::isfinite(value.abs_min) || !std::isfinite(value.abs_max)) {
      first_bad = &value;
      break;
    }
  }
  const std::string bad_what = first_bad ? first_bad->what : std::string();
  frames_.push_back(std::move(frame));
  while (frames_.size() > max_frames_) frames_.pop_front();
  if (bad_what.empty()) return;
  util::log::error("debug.underflow_overflow: the last " + std::to_string(frames_.size()) +
                   " module frames of the forward (abs-min, abs-max), the last with an inf or NaN:\n" + frames());
  throw util::DivergedError("debug.underflow_overflow: step " + std::to_string(step_) + ": an inf or NaN first in " +
                                (bad_what == "input" || bad_what == "output" ? "the " + bad_what + " of " + name
                                                                             : "weight " + name + "." + bad_what) +
                                " (the module frames before it are logged above)",
                            "look at the modules before it for values growing towards the dtype's limits, or "
                            "train with trainer.precision=fp32 or a lower optimizer.lr");
}

std::string NumericTrace::frames() const {
  std::string out;
  for (const Frame& f : frames_) {
    out += "  step " + std::to_string(f.step) + " " + f.name + "\n";
    for (const Value& v : f.values) {
      out += "    " + number(v.abs_min) + " " + number(v.abs_max) + "  " + v.what + "\n";
    }
  }
  return out;
}

}  // namespace hftrain::model
