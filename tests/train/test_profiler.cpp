// HFTRAIN_PROFILE (lib/train/report/profiler_callback.h): off without the variable, a clear error for a
// bad step range, and a recorded window holds exactly the operators of its steps.
#include <fstream>
#include <sstream>
#include <string>
#include "../torch_catch.h"  // first: see the file

#include <nlohmann/json.hpp>

#include "../config/helpers.h"
#include "train/report/profiler_callback.h"
#include "util/env.h"
#include "util/error.h"

using namespace hftrain;
using Catch::Matchers::Contains;

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Calls of `name` on the CPU in an ops table, or -1 when it has no such row.
int64_t calls_of(const std::string& table, const std::string& name) {
  std::istringstream lines(table);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("cpu\t" + name + "\t", 0) == 0) {
      const size_t a = line.find('\t', 4 + name.size()) + 1;
      return std::stoll(line.substr(a, line.find('\t', a) - a));
    }
  }
  return -1;
}

// One "step": a matrix product (aten::mm once) and an addition.
void fake_step(train::TrainState& state, train::Callback& cb) {
  const auto a = torch::ones({8, 8});
  const auto b = torch::mm(a, a);
  static_cast<void>(b + 1);
  ++state.step;
  cb.on_step_end(state);
}

}  // namespace

TEST_CASE("profiler: off unless HFTRAIN_PROFILE is set, and bad step ranges are refused", "[train][profiler]") {
  CHECK(train::make_profiler_callback(util::MapEnvironment{}, false, 0) == nullptr);
  CHECK(train::make_profiler_callback(util::MapEnvironment{{"HFTRAIN_PROFILE", ""}}, false, 0) == nullptr);
  for (const char* bad : {"3", "0:2", "5:4", "a:b", "2:", "2:3:4", "-1:2"}) {
    INFO(bad);
    util::MapEnvironment env{{"HFTRAIN_PROFILE", "/tmp/x"}, {"HFTRAIN_PROFILE_STEPS", bad}};
    CHECK_THROWS_AS(train::make_profiler_callback(env, false, 0), util::ConfigError);
    CHECK_THROWS_WITH(train::make_profiler_callback(env, false, 0), Contains("HFTRAIN_PROFILE_STEPS"));
  }
  util::MapEnvironment fine{{"HFTRAIN_PROFILE", "/tmp/x"}, {"HFTRAIN_PROFILE_STEPS", "4:4"}};
  CHECK(train::make_profiler_callback(fine, false, 0) != nullptr);
}

TEST_CASE("profiler: steps A to B are recorded, a trace and an ops table per rank", "[train][profiler]") {
  test::TempDir dir;
  const auto out = dir.path() / "prof";
  util::MapEnvironment env{{"HFTRAIN_PROFILE", out.string()}, {"HFTRAIN_PROFILE_STEPS", "2:4"}};
  auto cb = train::make_profiler_callback(env, false, 3);
  REQUIRE(cb);
  train::TrainState state;
  cb->on_train_begin(state);
  for (int i = 0; i < 6; ++i) fake_step(state, *cb);
  cb->on_train_end(state);

  const auto trace = nlohmann::json::parse(slurp(out / "trace-rank3.json"));
  CHECK(trace.contains("traceEvents"));
  const std::string table = slurp(out / "ops-rank3.tsv");
  CHECK(table.rfind("device\tname\tcalls\ttotal_us\tmean_us\n", 0) == 0);
  CHECK(calls_of(table, "aten::mm") == 3);  // steps 2, 3 and 4: not 1, 5 or 6
}

TEST_CASE("profiler: a window the run starts after records nothing, one cut short by the end is saved",
          "[train][profiler]") {
  test::TempDir dir;
  {
    util::MapEnvironment env{{"HFTRAIN_PROFILE", (dir.path() / "late").string()}, {"HFTRAIN_PROFILE_STEPS", "2:3"}};
    auto cb = train::make_profiler_callback(env, false, 0);
    train::TrainState state;
    state.step = 5;  // resumed after the window
    cb->on_train_begin(state);
    fake_step(state, *cb);
    cb->on_train_end(state);
    CHECK_FALSE(std::filesystem::exists(dir.path() / "late" / "trace-rank0.json"));
  }
  util::MapEnvironment env{{"HFTRAIN_PROFILE", (dir.path() / "short").string()}, {"HFTRAIN_PROFILE_STEPS", "1:10"}};
  auto cb = train::make_profiler_callback(env, false, 0);
  train::TrainState state;
  cb->on_train_begin(state);  // step 0 = A - 1: recording starts at once
  for (int i = 0; i < 2; ++i) fake_step(state, *cb);
  cb->on_train_end(state);
  CHECK(calls_of(slurp(dir.path() / "short" / "ops-rank0.tsv"), "aten::mm") == 2);
}
