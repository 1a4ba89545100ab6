// Where every rank is, so that a collective that times out can say who did not arrive. Each
// process counts its collectives (they happen in the same order on every rank) and knows its
// phase; a heartbeat thread publishes both once a second on a status board (the rendezvous
// store). On a timeout, the waiting rank reads the board: ranks behind it in the count did not
// arrive, ranks whose heartbeat stopped are gone.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "config/config.h"

namespace hftrain::parallel {

enum class Phase : int { kStartup, kData, kTrain, kEval, kCheckpoint };
const char* phase_name(Phase phase);

struct PhaseBudgets {
  double startup_s = 600, data_s = 3600, train_s = 600, eval_s = 1800, checkpoint_s = 1800;
  double of(Phase phase) const;
  double longest() const;  // of every phase
  static PhaseBudgets from_config(const config::DistributedConfig& config);
};

// A key-value board every rank can read and write (the c10d store in world.cpp; a map in tests).
class StatusBoard {
 public:
  virtual ~StatusBoard() = default;
  virtual void publish(int rank, const std::string& status) = 0;
  virtual std::optional<std::string> read(int rank) = 0;
};

class Monitor {
 public:
  // `board` may be null (one rank, or tests): diagnose() then names no ranks.
  Monitor(int rank, int world_size, PhaseBudgets budgets, std::shared_ptr<StatusBoard> board,
          std::chrono::milliseconds heartbeat = std::chrono::milliseconds(1000));
  ~Monitor();
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  Phase phase() const { return static_cast<Phase>(phase_.load()); }
  void set_phase(Phase phase);
  double budget_seconds() const { return budgets_.of(phase()); }
  const PhaseBudgets& budgets() const { return budgets_; }
  // Counts a collective; returns its sequence number (1, 2, ...).
  uint64_t begin_collective() { return seq_.fetch_add(1) + 1; }
  uint64_t collectives() const { return seq_.load(); }

  // The timeout message for collective `seq` (`what`, e.g. "all_reduce"): the phase, the budget,
  // and the ranks that did not arrive with where each was last seen.
  std::string diagnose(const std::string& what, uint64_t seq);
  // Publishes now (also called by the heartbeat thread).
  void publish();

 private:
  void heartbeat_loop(std::chrono::milliseconds every);

  int rank_, world_size_;
  PhaseBudgets budgets_;
  std::shared_ptr<StatusBoard> board_;
  std::atomic<int> phase_{static_cast<int>(Phase::kStartup)};
  std::atomic<uint64_t> seq_{0};
  std::mutex mutex_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  std::thread heartbeat_;
};

// Sets the phase for a scope and restores the previous one.
class PhaseScope {
 public:
  PhaseScope(Monitor* monitor, Phase phase);
  ~PhaseScope();
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  Monitor* monitor_;
  Phase previous_{Phase::kStartup};
};

}  // namespace hftrain::parallel
