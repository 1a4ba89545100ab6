#include "train/fault_injection.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "util/env.h"

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
    if (f.rank == rank && f.step == step && f.what == what && (f.attempt < 0 || f.attempt == this_attempt())) return true;
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

}  // namespace

void inject_test_fault(int rank, int64_t step) {
  if (faults().empty()) return;
  if (due(rank, step, "kill")) std::raise(SIGKILL);
  if (due(rank, step, "stall")) {
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }
  if (due(rank, step, "pause")) std::this_thread::sleep_for(std::chrono::seconds(8));  // then carries on
}

bool test_fault_poisons_gradient(int rank, int64_t step) { return !faults().empty() && due_once(rank, step, "nan"); }

bool test_fault_poisons_weight(int rank, int64_t step) {
  return !faults().empty() && due_once(rank, step, "nanweight");
}

bool test_fault_spikes_loss(int rank, int64_t step) { return !faults().empty() && due_once(rank, step, "spike"); }

}  // namespace hftrain::train
