// A test hook for the end-to-end tests (tests/e2e/dist_test.sh, resume_test.sh):
// HFTRAIN_TEST_FAULT=<rank>:<step>:kill|stall|pause makes that rank SIGKILL itself, stop
// answering, or sleep 8 s and go on, after that step. Read once per process; without the variable
// it does nothing.
#pragma once

#include <cstdint>

namespace hftrain::train {

void inject_test_fault(int rank, int64_t step);

}  // namespace hftrain::train
