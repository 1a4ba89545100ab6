// trainer.on_nonfinite=skip judged on the device (train/step/device_skip.h): the flag each step hands
// the optimizer, what a read reports, and the latch at trainer.max_consecutive_skips.
#include "../torch_catch.h"  // first: see the file

#include <limits>

#include "train/step/device_skip.h"

using hftrain::train::DeviceSkipJudge;

namespace {
torch::Tensor scalar(double v) { return torch::full({}, v, torch::kFloat32); }
const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();
}  // namespace

TEST_CASE("device skip: finite steps pass, a non-finite loss or norm sets the flag", "[train][device_skip]") {
  DeviceSkipJudge judge(torch::kCPU, 0);
  CHECK_FALSE(judge.pending());
  CHECK(judge.judge(1, scalar(2.5), scalar(1.0), 10).item<float>() == 0.0f);
  CHECK(judge.pending());
  const torch::Tensor flag = judge.judge(2, scalar(kNan), scalar(1.0), 7);
  CHECK(flag.scalar_type() == torch::kFloat32);
  CHECK(flag.item<float>() == 1.0f);  // exactly 1: the fused kernel skips on == 1
  CHECK(judge.kept(scalar(kNan)).item<float>() == 0.0f);  // the window leaves it out (not NaN x 0)
  CHECK(judge.judge(3, scalar(2.0), scalar(kInf), 5).item<float>() == 1.0f);
  CHECK(judge.kept(scalar(4.0)).item<float>() == 0.0f);
  CHECK(judge.judge(4, scalar(2.0), scalar(0.5), 9).item<float>() == 0.0f);
  CHECK(judge.kept(scalar(4.0)).item<float>() == 4.0f);
  const DeviceSkipJudge::Report r = judge.read();
  CHECK_FALSE(judge.pending());
  CHECK(r.skipped == 2);
  CHECK(r.dropped_targets == 12);
  CHECK(r.consecutive == 0);  // step 4 was good
  CHECK(r.last_bad_step == 3);
  CHECK(r.last_loss == 2.0);
  CHECK(r.last_norm == kInf);
  CHECK(r.limit_step == -1);
  // The next read counts from the last one.
  judge.judge(5, scalar(1.0), scalar(1.0), 3);
  const DeviceSkipJudge::Report next = judge.read();
  CHECK(next.skipped == 0);
  CHECK(next.dropped_targets == 0);
  CHECK(next.last_bad_step == -1);
}

TEST_CASE("device skip: the run of bad steps goes on across reads and latches at the limit", "[train][device_skip]") {
  DeviceSkipJudge judge(torch::kCPU, 3);
  judge.judge(1, scalar(1.0), scalar(1.0), 4);
  judge.judge(2, scalar(kNan), scalar(kNan), 4);
  DeviceSkipJudge::Report r = judge.read();
  CHECK(r.consecutive == 1);
  CHECK(r.limit_step == -1);
  judge.judge(3, scalar(kNan), scalar(1.0), 4);
  judge.judge(4, scalar(1.0), scalar(kInf), 4);  // the third in a row: the limit
  // Later steps stay skipped, finite or not, until the trainer reads and stops.
  CHECK(judge.judge(5, scalar(1.0), scalar(1.0), 4).item<float>() == 1.0f);
  CHECK(judge.judge(6, scalar(1.0), scalar(1.0), 4).item<float>() == 1.0f);
  r = judge.read();
  CHECK(r.limit_step == 4);
  CHECK(r.limit_loss == 1.0);
  CHECK(r.limit_norm == kInf);
  CHECK(r.skipped == 4);
  CHECK(r.dropped_targets == 16);
  CHECK(r.last_bad_step == 4);  // the newest non-finite step, not the latched ones after it
}
