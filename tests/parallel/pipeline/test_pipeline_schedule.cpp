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

// "F0.1": the forward of micro-batch 0 through chunk 1.
std::vector<PipelineOp> chunked_ops(std::initializer_list<const char*> list) {
  std::vector<PipelineOp> out;
  for (const char* op : list) {
    const std::string text(op);
    const size_t dot = text.find('.');
    out.push_back({text[0] == 'F', std::stoi(text.substr(1, dot - 1)), std::stoi(text.substr(dot + 1))});
  }
  return out;
}

// Runs every stage's exchanges against the others, as blocking exchanges whose transfers each
// complete once both sides have posted theirs (a rendezvous, the strictest a transport may be),
// sends and receives between two stages meeting in the order they were posted (as NCCL's and
// untagged MPI's do). Returns whether every stage got through all of them with every transfer
// meeting its counterpart: the same payload and micro-batch, between neighbouring virtual stages.
bool runs_through(PipelineSchedule schedule, int stages, int micro, int chunks = 1, bool tied = false) {
  std::vector<std::vector<std::vector<PipelineTransfer>>> ex;
  for (int s = 0; s < stages; ++s) {
    ex.push_back(stage_exchanges(stage_schedule(schedule, s, stages, micro, chunks), s, stages, chunks, tied));
  }
  // Posted sends and receives per (from, to), in order; a transfer of the current exchange is
  // done when the other side's list holds its counterpart at the same place.
  struct Posted {
    PipelineTransfer t;
    int stage;
  };
  std::map<std::pair<int, int>, std::vector<Posted>> sends, recvs;
  std::vector<size_t> at(static_cast<size_t>(stages), 0);
  // Per stage, the current exchange's transfers: their channel and place in it.
  std::vector<std::vector<std::tuple<bool, std::pair<int, int>, size_t>>> current(static_cast<size_t>(stages));
  const auto post = [&](int s) {
    current[static_cast<size_t>(s)].clear();
    if (at[static_cast<size_t>(s)] >= ex[static_cast<size_t>(s)].size()) return;
    for (const auto& t : ex[static_cast<size_t>(s)][at[static_cast<size_t>(s)]]) {
      const std::pair<int, int> channel = t.send ? std::pair{s, t.peer} : std::pair{t.peer, s};
      auto& list = t.send ? sends[channel] : recvs[channel];
      list.push_back({t, s});
      current[static_cast<size_t>(s)].emplace_back(t.send, channel, list.size() - 1);
    }
  };
  const auto vstage = [&](const Posted& p) { return p.t.chunk * stages + p.stage; };
  for (int s = 0; s < stages; ++s) post(s);
  for (bool moved = true; moved;) {
    moved = false;
    for (int s = 0; s < stages; ++s) {
      if (at[static_cast<size_t>(s)] >= ex[static_cast<size_t>(s)].size()) continue;
      bool done = true;
      for (const auto& [send, channel, place] : current[static_cast<size_t>(s)]) {
        const auto& other = send ? recvs[channel] : sends[channel];
        if (other.size() <= place) {
          done = false;
          continue;
        }
        const Posted& a = sends[channel][place];
        const Posted& b = recvs[channel][place];
        if (a.t.payload != b.t.payload || a.t.micro != b.t.micro) return false;
        if (a.t.payload == Payload::kActivation && vstage(b) != vstage(a) + 1) return false;
        if (a.t.payload == Payload::kGradient && vstage(b) + 1 != vstage(a)) return false;
      }
      if (!done) continue;
      ++at[static_cast<size_t>(s)];
      post(s);
      moved = true;
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
    for (int64_t i = b[static_cast<size_t>(s)]; i < b[static_cast<size_t>(s) + 1]; ++i)
      sum += blocks[static_cast<size_t>(i)];
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
  constexpr Payload A = Payload::kActivation, G = Payload::kGradient;
  CHECK(ex[0] == std::vector<PipelineTransfer>{{false, 0, A, 0}});
  CHECK(ex[1] == std::vector<PipelineTransfer>{{true, 2, A, 0}, {false, 0, A, 1}});
  CHECK(ex[2] == std::vector<PipelineTransfer>{{true, 2, A, 1}, {false, 2, G, 0}});
  CHECK(ex[3] == std::vector<PipelineTransfer>{{true, 0, G, 0}, {false, 2, G, 1}});
  CHECK(ex[4] == std::vector<PipelineTransfer>{{true, 0, G, 1}});
  // The first stage receives no activations; the last sends none.
  for (const auto& e : stage_exchanges(stage_schedule(PipelineSchedule::kGpipe, 0, 3, 2), 0, 3)) {
    for (const auto& t : e) CHECK((t.peer == 1 && t.send == (t.payload == A)));
  }
  // A tied embedding's gradient: from the last stage after its last op, to the first before its last.
  const auto last = stage_exchanges(stage_schedule(PipelineSchedule::k1f1b, 2, 3, 2), 2, 3, 1, true);
  CHECK(last.back() == std::vector<PipelineTransfer>{{true, 1, G, 1, 0}, {true, 0, Payload::kTiedGradient, 0, 0}});
  const auto first = stage_exchanges(stage_schedule(PipelineSchedule::k1f1b, 0, 3, 2), 0, 3, 1, true);
  CHECK(first[first.size() - 2].back() == PipelineTransfer{false, 2, Payload::kTiedGradient, 0, 0});
}

TEST_CASE("pipeline schedules: interleaved virtual stages, Megatron's order", "[pipeline]") {
  // Megatron's order, and in its steady state a forward and the next backward share their
  // exchanges: stage 0 receives F2.1's input and B0.0's gradient together, before F2.1.
  const auto steady = stage_exchanges(stage_schedule(PipelineSchedule::k1f1b, 0, 2, 4, 2), 0, 2, 2);
  CHECK(steady[8] == std::vector<PipelineTransfer>{{true, 1, Payload::kActivation, 3, 0},
                                                   {true, 1, Payload::kGradient, 1, 1},
                                                   {false, 1, Payload::kActivation, 2, 1},
                                                   {false, 1, Payload::kGradient, 0, 0}});
  CHECK(steady[9].empty());
  // 2 stages x 2 chunks, 4 micro-batches: stage 0 warms up with 2 (2 - 0 - 1) + (2 - 1) 2 = 4
  // forwards, groups of 2 micro-batches through chunk 0 then chunk 1.
  CHECK(stage_schedule(PipelineSchedule::k1f1b, 0, 2, 4, 2) ==
        chunked_ops({"F0.0", "F1.0", "F0.1", "F1.1", "F2.0", "B0.1", "F3.0", "B1.1", "F2.1", "B0.0", "F3.1", "B1.0",
                     "B2.1", "B3.1", "B2.0", "B3.0"}));
  CHECK(stage_schedule(PipelineSchedule::k1f1b, 1, 2, 4, 2) ==
        chunked_ops({"F0.0", "F1.0", "F0.1", "B0.1", "F1.1", "B1.1", "F2.0", "B0.0", "F3.0", "B1.0", "F2.1", "B2.1",
                     "F3.1", "B3.1", "B2.0", "B3.0"}));
  CHECK(stage_schedule(PipelineSchedule::kGpipe, 0, 2, 2, 2) ==
        chunked_ops({"F0.0", "F1.0", "F0.1", "F1.1", "B0.1", "B1.1", "B0.0", "B1.0"}));
  // Micro-batches in groups of the stages.
  CHECK_THROWS(stage_schedule(PipelineSchedule::k1f1b, 0, 2, 3, 2));
  for (const auto schedule : {PipelineSchedule::kGpipe, PipelineSchedule::k1f1b}) {
    for (int stages = 2; stages <= 4; ++stages) {
      for (int chunks = 2; chunks <= 3; ++chunks) {
        for (int micro = stages; micro <= 3 * stages; micro += stages) {
          for (int stage = 0; stage < stages; ++stage) {
            const auto ops = stage_schedule(schedule, stage, stages, micro, chunks);
            std::map<std::pair<int, int>, int> seen;
            for (const auto& op : ops) CHECK(seen[{op.chunk, op.micro}]++ == (op.forward ? 0 : 1));
            CHECK(seen.size() == static_cast<size_t>(micro * chunks));
            CHECK(ops.back() == PipelineOp{false, micro - 1, 0});
          }
          // 1f1b holds fewer activations than gpipe on the first stage once there are more
          // micro-batches than the warm-up.
          if (schedule == PipelineSchedule::k1f1b && micro > 2 * stages) {
            CHECK(activations_in_flight(stage_schedule(schedule, 0, stages, micro, chunks)) < micro * chunks);
          }
        }
      }
    }
  }
}

TEST_CASE("pipeline exchanges: both schedules run through without a cycle of waits", "[pipeline]") {
  for (const auto schedule : {PipelineSchedule::kGpipe, PipelineSchedule::k1f1b}) {
    for (int stages = 2; stages <= 8; ++stages) {
      for (int micro = 1; micro <= 12; ++micro) {
        INFO("stages " << stages << ", micro-batches " << micro);
        CHECK(runs_through(schedule, stages, micro));
        CHECK(runs_through(schedule, stages, micro, 1, /*tied=*/true));
      }
      for (int chunks = 2; chunks <= 4; ++chunks) {
        for (int micro = stages; micro <= 4 * stages; micro += stages) {
          INFO((schedule == PipelineSchedule::kGpipe ? "gpipe" : "1f1b")
               << ": stages " << stages << ", chunks " << chunks << ", micro-batches " << micro);
          CHECK(runs_through(schedule, stages, micro, chunks, /*tied=*/true));
        }
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
