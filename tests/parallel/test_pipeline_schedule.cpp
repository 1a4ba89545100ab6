// Pipeline parallelism's plan: the schedules' orders (each micro-batch forward then backward once,
// gpipe's and 1f1b's activation bounds), the exchanges between stages (the two sides of every
// pair of neighbours agree, and blocking exchanges of a whole pipeline never wait on each other in
// a cycle, checked by running them against each other), and the balanced block boundaries
// (against every possible split).
#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

#include "parallel/pipeline/schedule.h"

using namespace hftrain::parallel;

namespace {

std::vector<PipelineOp> ops_of(std::initializer_list<std::pair<char, int>> list) {
  std::vector<PipelineOp> out;
  for (const auto& [kind, m] : list) out.push_back({kind == 'F', m});
  return out;
}

// Runs every stage's exchanges against the others, as blocking exchanges whose transfers each
// complete once both sides have posted theirs (a rendezvous, the strictest a transport may be).
// Returns whether every stage got through all of them.
bool runs_through(PipelineSchedule schedule, int stages, int micro) {
  std::vector<std::vector<std::vector<PipelineTransfer>>> ex;
  for (int s = 0; s < stages; ++s) ex.push_back(stage_exchanges(stage_schedule(schedule, s, stages, micro), s, stages));
  std::vector<size_t> at(static_cast<size_t>(stages), 0);
  const auto posted = [&](int stage, const PipelineTransfer& t) {
    // The counterpart of `t` (stage's) in the peer's current exchange.
    if (at[static_cast<size_t>(t.peer)] >= ex[static_cast<size_t>(t.peer)].size()) return false;
    for (const auto& u : ex[static_cast<size_t>(t.peer)][at[static_cast<size_t>(t.peer)]]) {
      if (u.peer == stage && u.send != t.send && u.activation == t.activation && u.micro == t.micro) return true;
    }
    return false;
  };
  // done[s][i]: transfer i of stage s's current exchange has met its counterpart.
  std::vector<std::vector<bool>> done(static_cast<size_t>(stages));
  const auto current = [&](int s) -> const std::vector<PipelineTransfer>& { return ex[static_cast<size_t>(s)][at[static_cast<size_t>(s)]]; };
  for (int s = 0; s < stages; ++s) done[static_cast<size_t>(s)].assign(current(s).size(), false);
  for (bool moved = true; moved;) {
    moved = false;
    for (int s = 0; s < stages; ++s) {
      if (at[static_cast<size_t>(s)] >= ex[static_cast<size_t>(s)].size()) continue;
      for (size_t i = 0; i < current(s).size(); ++i) {
        if (posted(s, current(s)[i])) done[static_cast<size_t>(s)][i] = true;
      }
    }
    for (int s = 0; s < stages; ++s) {
      if (at[static_cast<size_t>(s)] >= ex[static_cast<size_t>(s)].size()) continue;
      const auto& d = done[static_cast<size_t>(s)];
      if (std::all_of(d.begin(), d.end(), [](bool b) { return b; })) {
        ++at[static_cast<size_t>(s)];
        moved = true;
        if (at[static_cast<size_t>(s)] < ex[static_cast<size_t>(s)].size()) {
          done[static_cast<size_t>(s)].assign(current(s).size(), false);
        }
      }
    }
  }
  for (int s = 0; s < stages; ++s) {
    if (at[static_cast<size_t>(s)] != ex[static_cast<size_t>(s)].size()) return false;
  }
  return true;
}

int64_t largest_stage(const std::vector<int64_t>& blocks, int64_t first, int64_t last, const std::vector<int64_t>& b) {
  int64_t most = 0;
  const int stages = static_cast<int>(b.size()) - 1;
  for (int s = 0; s < stages; ++s) {
    int64_t sum = (s == 0 ? first : 0) + (s == stages - 1 ? last : 0);
    for (int64_t i = b[static_cast<size_t>(s)]; i < b[static_cast<size_t>(s) + 1]; ++i) sum += blocks[static_cast<size_t>(i)];
    most = std::max(most, sum);
  }
  return most;
}

}  // namespace

TEST_CASE("pipeline schedules: gpipe runs every forward then every backward", "[pipeline]") {
  CHECK(stage_schedule(PipelineSchedule::kGpipe, 1, 2, 3) ==
        ops_of({{'F', 0}, {'F', 1}, {'F', 2}, {'B', 0}, {'B', 1}, {'B', 2}}));
  CHECK(activations_in_flight(stage_schedule(PipelineSchedule::kGpipe, 0, 4, 6)) == 6);
}

TEST_CASE("pipeline schedules: 1f1b warms up by the stages after it then alternates", "[pipeline]") {
  CHECK(stage_schedule(PipelineSchedule::k1f1b, 0, 4, 6) ==
        ops_of({{'F', 0}, {'F', 1}, {'F', 2}, {'F', 3}, {'B', 0}, {'F', 4}, {'B', 1}, {'F', 5}, {'B', 2}, {'B', 3},
                {'B', 4}, {'B', 5}}));
  CHECK(stage_schedule(PipelineSchedule::k1f1b, 3, 4, 3) ==
        ops_of({{'F', 0}, {'B', 0}, {'F', 1}, {'B', 1}, {'F', 2}, {'B', 2}}));
  // Fewer micro-batches than stages: the warm-up is all of them.
  CHECK(stage_schedule(PipelineSchedule::k1f1b, 0, 4, 2) == ops_of({{'F', 0}, {'F', 1}, {'B', 0}, {'B', 1}}));
  for (int stages = 1; stages <= 6; ++stages) {
    for (int stage = 0; stage < stages; ++stage) {
      for (int micro = 1; micro <= 9; ++micro) {
        const auto ops = stage_schedule(PipelineSchedule::k1f1b, stage, stages, micro);
        // Each micro-batch once each way, its forward first, and the last op the last backward
        // (where the loop sends a tied embedding's gradient).
        std::map<int, int> seen;
        for (const auto& op : ops) {
          if (op.forward) CHECK(seen[op.micro]++ == 0);
          if (!op.forward) CHECK(seen[op.micro]++ == 1);
        }
        CHECK(seen.size() == static_cast<size_t>(micro));
        CHECK(ops.back() == PipelineOp{false, micro - 1});
        CHECK(activations_in_flight(ops) == std::min(stages - stage, micro));
      }
    }
  }
}

TEST_CASE("pipeline exchanges: a send with the next op's receives, the first and last stages' ends", "[pipeline]") {
  // Stage 1 of 3 under 1f1b with 2 micro-batches: F0 F1 B0 B1.
  const auto ops = stage_schedule(PipelineSchedule::k1f1b, 1, 3, 2);
  const auto ex = stage_exchanges(ops, 1, 3);
  REQUIRE(ex.size() == ops.size() + 1);
  CHECK(ex[0] == std::vector<PipelineTransfer>{{false, 0, true, 0}});
  CHECK(ex[1] == std::vector<PipelineTransfer>{{true, 2, true, 0}, {false, 0, true, 1}});
  CHECK(ex[2] == std::vector<PipelineTransfer>{{true, 2, true, 1}, {false, 2, false, 0}});
  CHECK(ex[3] == std::vector<PipelineTransfer>{{true, 0, false, 0}, {false, 2, false, 1}});
  CHECK(ex[4] == std::vector<PipelineTransfer>{{true, 0, false, 1}});
  // The first stage receives no activations; the last sends none.
  for (const auto& e : stage_exchanges(stage_schedule(PipelineSchedule::kGpipe, 0, 3, 2), 0, 3)) {
    for (const auto& t : e) CHECK((t.peer == 1 && t.send == t.activation));
  }
}

TEST_CASE("pipeline exchanges: both schedules run through without a cycle of waits", "[pipeline]") {
  for (const auto schedule : {PipelineSchedule::kGpipe, PipelineSchedule::k1f1b}) {
    for (int stages = 2; stages <= 8; ++stages) {
      for (int micro = 1; micro <= 12; ++micro) {
        INFO("stages " << stages << ", micro-batches " << micro);
        CHECK(runs_through(schedule, stages, micro));
      }
    }
  }
}

TEST_CASE("pipeline boundaries: balanced by parameters, as good as any split", "[pipeline]") {
  // Equal blocks, nothing else: an even split.
  CHECK(balanced_boundaries(std::vector<int64_t>(8, 10), 0, 0, 4) == std::vector<int64_t>{0, 2, 4, 6, 8});
  // A heavy embedding takes the first stage's share: fewer blocks there.
  CHECK(balanced_boundaries(std::vector<int64_t>(12, 10), 20, 0, 2) == std::vector<int64_t>{0, 5, 12});
  CHECK_THROWS(balanced_boundaries(std::vector<int64_t>(3, 10), 0, 0, 4));
  // Against every split of up to 7 blocks into up to 4 stages.
  const std::vector<int64_t> blocks{7, 3, 9, 4, 4, 8, 2};
  for (int n = 1; n <= 7; ++n) {
    const std::vector<int64_t> b(blocks.begin(), blocks.begin() + n);
    for (int stages = 1; stages <= std::min(n, 4); ++stages) {
      for (const auto& [first, last] : {std::pair<int64_t, int64_t>{0, 0}, {12, 5}, {1, 20}}) {
        const auto got = balanced_boundaries(b, first, last, stages);
        REQUIRE(got.size() == static_cast<size_t>(stages) + 1);
        CHECK(got.front() == 0);
        CHECK(got.back() == n);
        for (size_t i = 1; i < got.size(); ++i) CHECK(got[i] > got[i - 1]);
        // The best over every choice of stages - 1 cut points.
        int64_t best = std::numeric_limits<int64_t>::max();
        for (int mask = 0; mask < (1 << (n - 1)); ++mask) {
          if (__builtin_popcount(static_cast<unsigned>(mask)) != stages - 1) continue;
          std::vector<int64_t> cut{0};
          for (int i = 0; i < n - 1; ++i) {
            if (mask & (1 << i)) cut.push_back(i + 1);
          }
          cut.push_back(n);
          best = std::min(best, largest_stage(b, first, last, cut));
        }
        CHECK(largest_stage(b, first, last, got) == best);
      }
    }
  }
}
