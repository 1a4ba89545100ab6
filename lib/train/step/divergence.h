// Non-finite and divergent steps (trainer.on_nonfinite, trainer.spike.*): which steps are bad, and
// how many in a row the run has skipped. The trainer reads a step's loss and gradient norm (both
// the same on every rank) and acts on the verdict: skip the update, roll back to a checkpoint, or
// stop. Host values only: the trainer decides when to read them from the device.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace hftrain::train {

struct Verdict {
  bool bad = false;
  std::string why;  // "the loss is nan", "loss 9.12 is 6.1 x the median 1.5 of the last 20 steps"
};

// Why a step whose loss or gradient norm is not finite is bad ("the loss is nan"); "" when both are.
std::string nonfinite_why(double loss, double grad_norm);

class DivergenceJudge {
 public:
  // `spike_factor` 0: spikes are not judged; otherwise a step whose loss exceeds spike_factor x
  // the median of the last `spike_window` good steps' losses is bad (once that many were seen).
  // `max_consecutive`: bad steps in a row after which the run stops (0: never).
  DivergenceJudge(double spike_factor, int64_t spike_window, int64_t max_consecutive);

  // One step's loss (mean per target token over the whole step) and gradient norm. A good step's
  // loss joins the window; a bad one's does not.
  Verdict judge(double loss, double grad_norm);
  // A bad step was handled (skipped or rolled back): true when that makes max_consecutive in a
  // row. A good step ends the run of bad ones.
  bool note_bad();
  void note_good() { consecutive_ = 0; }
  int64_t consecutive() const { return consecutive_; }
  bool judges_spikes() const { return spike_factor_ > 0; }
  // The median of the window's losses (needs a full window).
  double median() const;

  // What a checkpoint keeps of the judge, so that a resumed run judges as the run alone would: the
  // window of good steps' losses (oldest first) and the bad steps in a row.
  struct State {
    std::vector<double> recent;
    int64_t consecutive = 0;
  };
  State state() const { return {{recent_.begin(), recent_.end()}, consecutive_}; }
  // The newest spike_window losses of `s` are kept.
  void restore(const State& s);

 private:
  double spike_factor_;
  size_t spike_window_;
  int64_t max_consecutive_;
  int64_t consecutive_ = 0;
  std::deque<double> recent_;  // the last spike_window good steps' losses, oldest first
};

}  // namespace hftrain::train
