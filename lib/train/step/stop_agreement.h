// Whether the ranks stop after a step, and all after the same one: a signal any rank saw
// (Ctrl-C, a scheduler's SIGTERM), or the run directory deleted or moved under the main rank (it
// notices with one stat a step and makes a new directory at the path at once, since the others
// write optimizer shards there).
//
// One rank decides alone, at once. Several agree through a max over the ranks, without making the
// step wait for the device: each step's view is posted (an all-reduce, then a copy to the host
// behind an event), and read one step later, when the device has long finished it; a step that
// reads the device anyway (logging, evaluation, the last) reads its own at once. So a signal stops
// every rank after the same step: the one that saw it, or the next.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>

#include <c10/core/Event.h>
#include <torch/types.h>

#include "ckpt/run_lock.h"
#include "parallel/comm/world.h"

namespace hftrain::train {

class StopAgreement {
 public:
  // `signal`: set by the signal handler (may be null); `run_dir`: watched on the main rank.
  StopAgreement(parallel::World& world, const std::atomic<int>* signal, std::filesystem::path run_dir,
                const torch::Device& device);

  struct Decision {
    int signal = 0;              // the signal to stop for (0: none)
    bool run_dir_lost = false;   // the main rank lost the run directory (a new one is at its path)
    int64_t noticed_after = -1;  // the step after which it was seen
    // The step of the newest background save (checkpoint.async) every rank has written, and that
    // every rank has published (-1: none).
    int64_t written_through = -1;
    int64_t published_through = -1;
    bool stop() const { return signal != 0 || run_dir_lost; }
  };
  // After step `step` (every rank, in the same order of calls): what all ranks agree on now.
  // `now`: this step reads the device anyway, so its own view is agreed at once. `written_through`,
  // `published_through`: the step of the background save this rank has written, and published
  // (-1: none); the decision carries the smallest of each over the ranks (of the view it agrees
  // on: possibly a step old).
  Decision after_step(int64_t step, bool now, int64_t written_through = -1, int64_t published_through = -1);

 private:
  // This rank's view after `step`: (signal, lost).
  std::pair<int64_t, int64_t> look(int64_t step);
  struct Posted {
    torch::Tensor host;  // (signal, lost, -written_through, -published_through), once the event has passed
    std::optional<c10::Event> ready;
    int64_t step = 0;
  };
  Posted post(int64_t signal, int64_t lost, int64_t written_through, int64_t published_through, int64_t step);
  Decision read(Posted& posted);

  parallel::World& world_;
  const std::atomic<int>* signal_;
  std::filesystem::path run_dir_;
  ckpt::DirIdentity run_dir_id_;
  torch::Device device_;
  std::optional<Posted> pending_;
};

}  // namespace hftrain::train
