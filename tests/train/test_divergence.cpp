// The divergence judge (trainer.on_nonfinite, trainer.spike.*): non-finite losses and norms, loss
// spikes against the median of the window of good steps, and the count of bad steps in a row.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "train/step/divergence.h"

using hftrain::train::DivergenceJudge;

TEST_CASE("divergence: a NaN or inf loss or gradient norm is bad, named", "[train]") {
  DivergenceJudge judge(0, 10, 3);
  CHECK_FALSE(judge.judge(2.5, 1.0).bad);
  const auto nan_loss = judge.judge(std::nan(""), 1.0);
  CHECK(nan_loss.bad);
  CHECK(nan_loss.why == "the loss is nan");
  const auto inf_norm = judge.judge(2.0, std::numeric_limits<double>::infinity());
  CHECK(inf_norm.bad);
  CHECK(inf_norm.why == "the gradient norm is inf");
  // Without a spike factor any finite loss is good, however large.
  CHECK_FALSE(judge.judge(1e30, 1.0).bad);
}

TEST_CASE("divergence: a spike is judged against the median of a full window of good steps", "[train]") {
  DivergenceJudge judge(3.0, 4, 0);
  // Not judged until the window holds 4 good steps.
  for (double loss : {2.0, 1.0, 100.0}) CHECK_FALSE(judge.judge(loss, 1.0).bad);
  CHECK_FALSE(judge.judge(3.0, 1.0).bad);  // window 2, 1, 100, 3: median 2.5
  CHECK(judge.median() == Approx(2.5));
  CHECK_FALSE(judge.judge(7.4, 1.0).bad);  // <= 3 x 2.5; window 1, 100, 3, 7.4: median 5.2
  CHECK(judge.median() == Approx(5.2));
  const auto spike = judge.judge(16.0, 1.0);  // > 3 x 5.2
  CHECK(spike.bad);
  CHECK(spike.why.find("a loss spike: 16 is 3.08 x the median 5.2 of the last 4 steps") == 0);
  // The spike did not join the window.
  CHECK(judge.median() == Approx(5.2));
}

TEST_CASE("divergence: bad steps in a row stop the run at the limit, a good one resets the count", "[train]") {
  DivergenceJudge judge(0, 10, 3);
  CHECK_FALSE(judge.note_bad());
  CHECK_FALSE(judge.note_bad());
  judge.note_good();
  CHECK(judge.consecutive() == 0);
  CHECK_FALSE(judge.note_bad());
  CHECK_FALSE(judge.note_bad());
  CHECK(judge.note_bad());
  // 0: never.
  DivergenceJudge unbounded(0, 10, 0);
  for (int i = 0; i < 100; ++i) CHECK_FALSE(unbounded.note_bad());
}
