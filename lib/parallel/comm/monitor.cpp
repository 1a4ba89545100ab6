#include "parallel/comm/monitor.h"

#include <algorithm>

#include <cstdio>
#include <sstream>
#include <vector>

namespace hftrain::parallel {
namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Seen {
  int phase = 0;
  uint64_t seq = 0;
  int64_t time_ms = 0;
};

std::optional<Seen> parse_status(const std::string& text) {
  Seen s;
  unsigned long long seq = 0;
  long long t = 0;
  if (std::sscanf(text.c_str(), "%d %llu %lld", &s.phase, &seq, &t) != 3) return std::nullopt;
  s.seq = seq, s.time_ms = t;
  return s;
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s < 10 ? "%.1f s" : "%.0f s", s);
  return buf;
}

}  // namespace

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::kStartup: return "start-up";
    case Phase::kData: return "data preparation";
    case Phase::kTrain: return "training step";
    case Phase::kEval: return "evaluation";
    case Phase::kCheckpoint: return "checkpointing";
  }
  return "?";
}

double PhaseBudgets::longest() const {
  return std::max({startup_s, data_s, train_s, eval_s, checkpoint_s});
}

double PhaseBudgets::of(Phase phase) const {
  switch (phase) {
    case Phase::kStartup: return startup_s;
    case Phase::kData: return data_s;
    case Phase::kTrain: return train_s;
    case Phase::kEval: return eval_s;
    case Phase::kCheckpoint: return checkpoint_s;
  }
  return train_s;
}

PhaseBudgets PhaseBudgets::from_config(const config::DistributedConfig& c) {
  PhaseBudgets b;
  b.startup_s = c.startup_timeout, b.data_s = c.data_timeout, b.train_s = c.timeout;
  b.eval_s = c.eval_timeout, b.checkpoint_s = c.checkpoint_timeout;
  return b;
}

Monitor::Monitor(int rank, int world_size, PhaseBudgets budgets, std::shared_ptr<StatusBoard> board,
                 std::chrono::milliseconds heartbeat)
    : rank_(rank), world_size_(world_size), budgets_(budgets), board_(std::move(board)) {
  if (board_) {
    publish();
    heartbeat_ = std::thread([this, heartbeat] { heartbeat_loop(heartbeat); });
  }
}

Monitor::~Monitor() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
}

void Monitor::set_phase(Phase phase) {
  phase_.store(static_cast<int>(phase));
}

void Monitor::publish() {
  if (!board_) return;
  try {
    board_->publish(rank_, std::to_string(phase_.load()) + " " + std::to_string(seq_.load()) + " " +
                               std::to_string(now_ms()));
  } catch (const std::exception&) {
    // The board is gone (the store's host ended): the collectives will report it.
  }
}

void Monitor::heartbeat_loop(std::chrono::milliseconds every) {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_cv_.wait_for(lock, every, [this] { return stop_; })) {
    lock.unlock();
    publish();
    lock.lock();
  }
}

std::string Monitor::diagnose(const std::string& what, uint64_t seq) {
  std::ostringstream out;
  out << "rank " << rank_ << ": " << what << " (collective #" << seq << ") did not complete within "
      << seconds(budget_seconds()) << ", the budget of the " << phase_name(phase()) << " phase";
  if (!board_) return out.str();
  std::vector<std::string> missing;
  const int64_t now = now_ms();
  for (int r = 0; r < world_size_; ++r) {
    if (r == rank_) continue;
    std::optional<Seen> seen;
    try {
      if (auto text = board_->read(r)) seen = parse_status(*text);
    } catch (const std::exception&) {
    }
    if (!seen) {
      missing.push_back("rank " + std::to_string(r) + " (never reported)");
      continue;
    }
    const double age = static_cast<double>(now - seen->time_ms) / 1000.0;
    const bool gone = age > 10.0;
    if (seen->seq >= seq && !gone) continue;  // it arrived (its heartbeat may lag behind)
    std::string where = "rank " + std::to_string(r) + " (at collective #" + std::to_string(seen->seq) + " in the " +
                        phase_name(static_cast<Phase>(seen->phase)) + " phase";
    where += gone ? ", no heartbeat for " + seconds(age) + ": the process is gone or frozen)" : ")";
    missing.push_back(where);
  }
  if (missing.empty()) {
    out << "; every rank arrived (the network or the backend is stuck)";
  } else {
    out << "; did not arrive: ";
    for (size_t i = 0; i < missing.size(); ++i) out << (i ? ", " : "") << missing[i];
  }
  return out.str();
}

PhaseScope::PhaseScope(Monitor* monitor, Phase phase) : monitor_(monitor) {
  if (monitor_) {
    previous_ = monitor_->phase();
    monitor_->set_phase(phase);
  }
}

PhaseScope::~PhaseScope() {
  if (monitor_) monitor_->set_phase(previous_);
}

}  // namespace hftrain::parallel
