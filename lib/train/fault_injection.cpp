#include "train/fault_injection.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>

#include "util/env.h"

namespace hftrain::train {

void inject_test_fault(int rank, int64_t step) {
  static const std::optional<std::string> spec = util::Environment::process().get("HFTRAIN_TEST_FAULT");
  if (!spec) return;
  int fault_rank = -1;
  long long fault_step = -1;
  char what[16] = {};
  if (std::sscanf(spec->c_str(), "%d:%lld:%15s", &fault_rank, &fault_step, what) != 3) return;
  if (fault_rank != rank || fault_step != step) return;
  if (std::string(what) == "kill") std::raise(SIGKILL);
  if (std::string(what) == "stall") {
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }
  if (std::string(what) == "pause") std::this_thread::sleep_for(std::chrono::seconds(8));  // then carries on
}

}  // namespace hftrain::train
