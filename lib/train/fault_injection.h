// A test hook for the distributed end-to-end tests (tests/e2e/dist_test.sh):
// HFTRAIN_TEST_FAULT=<rank>:<step>:kill|stall makes that rank SIGKILL itself, or stop
// answering, after that step. Read once per process; without the variable it does nothing.
#pragma once

#include <cstdint>

namespace hftrain::train {

void inject_test_fault(int rank, int64_t step);

}  // namespace hftrain::train
