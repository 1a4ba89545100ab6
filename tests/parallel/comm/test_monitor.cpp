#include <catch2/catch.hpp>

#include <map>
#include <mutex>

#include "parallel/comm/monitor.h"

using namespace hftrain;
using Catch::Matchers::Contains;

namespace {

class MapBoard final : public parallel::StatusBoard {
 public:
  void publish(int rank, const std::string& status) override {
    std::lock_guard<std::mutex> lock(mutex_);
    values_[rank] = status;
  }
  std::optional<std::string> read(int rank) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = values_.find(rank);
    if (it == values_.end()) return std::nullopt;
    return it->second;
  }

 private:
  std::mutex mutex_;
  std::map<int, std::string> values_;
};

}  // namespace

TEST_CASE("monitor: a timeout names the phase, the budget and the ranks that did not arrive", "[dist]") {
  auto board = std::make_shared<MapBoard>();
  parallel::PhaseBudgets budgets;
  budgets.train_s = 5;
  parallel::Monitor me(0, 4, budgets, board, std::chrono::milliseconds(10));
  me.set_phase(parallel::Phase::kTrain);
  for (int i = 0; i < 3; ++i) me.begin_collective();
  me.publish();
  // Rank 1 reached the collective, rank 2 is behind in evaluation, rank 3 never reported.
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch()).count();
  board->publish(1, "2 3 " + std::to_string(now));
  board->publish(2, "3 2 " + std::to_string(now));
  const std::string m = me.diagnose("all_reduce", 3);
  CHECK_THAT(m, Contains("all_reduce (collective #3) did not complete within 5.0 s"));
  CHECK_THAT(m, Contains("training step phase"));
  CHECK_THAT(m, Contains("rank 2 (at collective #2 in the evaluation phase)"));
  CHECK_THAT(m, Contains("rank 3 (never reported)"));
  CHECK_THAT(m, !Contains("rank 1"));
}

TEST_CASE("monitor: a rank whose heartbeat stopped is reported as gone", "[dist]") {
  auto board = std::make_shared<MapBoard>();
  parallel::Monitor me(1, 2, parallel::PhaseBudgets{}, board, std::chrono::milliseconds(10));
  const auto old = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch()).count() - 60000;
  board->publish(0, "2 9 " + std::to_string(old));
  CHECK_THAT(me.diagnose("barrier", 9), Contains("no heartbeat for 60 s"));
}

TEST_CASE("monitor: phase scopes nest and restore", "[dist]") {
  parallel::Monitor m(0, 1, parallel::PhaseBudgets{}, nullptr);
  {
    parallel::PhaseScope train(&m, parallel::Phase::kTrain);
    {
      parallel::PhaseScope ckpt(&m, parallel::Phase::kCheckpoint);
      CHECK(m.phase() == parallel::Phase::kCheckpoint);
      CHECK(m.budget_seconds() == 1800);
    }
    CHECK(m.phase() == parallel::Phase::kTrain);
  }
  CHECK(m.phase() == parallel::Phase::kStartup);
}
