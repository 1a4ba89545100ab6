#include "train/step/fault_injection.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "model/numeric_trace.h"
#include "util/env.h"
#include "util/log.h"

namespace hftrain::train {
namespace {

struct Fault {
  int rank = -1;
  long long step = -1;
  std::string what;
  int attempt = -1;  // what@K: only in attempt K of a supervised job (HFTRAIN_RESTART_COUNT); -1: any
};

int this_attempt() {
  const std::optional<std::string> count = util::Environment::process().get("HFTRAIN_RESTART_COUNT");
  return count ? std::atoi(count->c_str()) : 0;
}

const std::vector<Fault>& faults() {
  static const std::vector<Fault> parsed = [] {
    std::vector<Fault> out;
    const std::optional<std::string> spec = util::Environment::process().get("HFTRAIN_TEST_FAULT");
    if (!spec) return out;
    std::stringstream in(*spec);
    std::string item;
    while (std::getline(in, item, ',')) {
      Fault f;
      char what[16] = {};
      if (std::sscanf(item.c_str(), "%d:%lld:%15s", &f.rank, &f.step, what) == 3) {
        f.what = what;
        if (const size_t at = f.what.find('@'); at != std::string::npos) {
          f.attempt = std::atoi(f.what.c_str() + at + 1);
          f.what.erase(at);
        }
        out.push_back(f);
      }
    }
    return out;
  }();
  return parsed;
}

bool due(int rank, int64_t step, const char* what) {
  for (const Fault& f : faults()) {
    if (f.rank == rank && f.step == step && f.what == what && (f.attempt < 0 || f.attempt == this_attempt()))
      return true;
  }
  return false;
}

// A fault of the data (a poisoned gradient or weight, a spike) happens once: a rolled-back run
// that reaches the step again trains on other samples.
bool due_once(int rank, int64_t step, const char* what) {
  static std::vector<std::string> fired;
  const std::string key = std::to_string(rank) + ":" + std::to_string(step) + ":" + what;
  if (!due(rank, step, what) || std::find(fired.begin(), fired.end(), key) != fired.end()) return false;
  fired.push_back(key);
  return true;
}

// The first trained parameter's gradient (or the parameter itself) filled with NaN.
void poison_first_parameter(TaskModel& model, int64_t step, bool weight) {
  torch::NoGradGuard no_grad;
  for (const auto& [name, p] : model.parameters_by_name()) {
    if (!p.requires_grad()) continue;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    if (weight) {
      if (!model::readable(p)) continue;
      torch::Tensor(p).detach().fill_(nan);
    } else if (p.grad().defined()) {
      torch::Tensor(p).mutable_grad().fill_(nan);
    } else {
      torch::Tensor(p).mutable_grad() = torch::full(p.sizes(), nan, p.options());
    }
    util::log::warn("HFTRAIN_TEST_FAULT: " + std::string(weight ? "parameter " : "the gradient of ") + name +
                    " filled with NaN in step " + std::to_string(step));
    return;
  }
}

class TestFaults final : public StepHooks {
 public:
  explicit TestFaults(int rank) : rank_(rank) {}
  void before_forward(int64_t step, TaskModel& model) override {
    if (due_once(rank_, step, "nanweight")) poison_first_parameter(model, step, /*weight=*/true);
  }
  void before_last_backward(int64_t step, TaskModel& model) override {
    if (due_once(rank_, step, "nan")) poison_first_parameter(model, step, /*weight=*/false);
  }
  double loss_factor(int64_t step) override { return due_once(rank_, step, "spike") ? 1000.0 : 1.0; }
  void after_step(int64_t step) override {
    if (due(rank_, step, "kill")) std::raise(SIGKILL);
    if (due(rank_, step, "stall")) {
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    }
    if (due(rank_, step, "pause")) std::this_thread::sleep_for(std::chrono::seconds(8));  // then carries on
  }

 private:
  int rank_;
};

}  // namespace

std::shared_ptr<StepHooks> make_test_faults(int rank) {
  if (faults().empty()) return nullptr;
  return std::make_shared<TestFaults>(rank);
}

}  // namespace hftrain::train
