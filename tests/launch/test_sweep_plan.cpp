// `hftrain sweep`'s points (lib/launch/sweep_plan.h): which overrides are dimensions, the grid's
// order and names, random draws within their ranges and repeatable from the seed, and the
// mistakes refused with the argument named.
#include <cmath>
#include <set>

#include <catch2/catch.hpp>

#include "launch/sweep_plan.h"
#include "util/error.h"

using namespace hftrain;
using Catch::Matchers::Contains;

TEST_CASE("sweep plan: commas outside brackets and quotes make a dimension", "[launch]") {
  CHECK(launch::split_top_level("1e-4,3e-4") == std::vector<std::string>{"1e-4", "3e-4"});
  CHECK(launch::split_top_level("[jsonl, mlflow]").size() == 1);
  CHECK(launch::split_top_level("'a,b',c") == std::vector<std::string>{"'a,b'", "c"});
  CHECK(launch::split_top_level("{x: 1, y: 2},[1,2]") == std::vector<std::string>{"{x: 1, y: 2}", "[1,2]"});
  const auto spec = launch::parse_sweep({"optimizer.lr=1e-4,3e-4", "trainer.max_steps=10",
                                         "logging.report_to=[jsonl, mlflow]", "~model.n_kv_head", "run.seed=1,2,3"},
                                        0, 0);
  CHECK(spec.fixed ==
        std::vector<std::string>{"trainer.max_steps=10", "logging.report_to=[jsonl, mlflow]", "~model.n_kv_head"});
  REQUIRE(spec.dimensions.size() == 2);
  CHECK(spec.dimensions[1].values == std::vector<std::string>{"1", "2", "3"});
}

TEST_CASE("sweep plan: the grid, first key outermost, named by the keys' last parts", "[launch]") {
  const auto points = launch::plan_points(launch::parse_sweep({"optimizer.lr=1e-4,3e-4", "run.seed=1,2"}, 0, 0));
  REQUIRE(points.size() == 4);
  CHECK(points[0].name == "lr=1e-4,seed=1");
  CHECK(points[1].name == "lr=1e-4,seed=2");
  CHECK(points[3].name == "lr=3e-4,seed=2");
  CHECK(points[2].overrides == std::vector<std::string>{"optimizer.lr=3e-4", "run.seed=1"});
  // Keys that share a last part are named in full; '/' in a value cannot make a folder.
  const auto same = launch::plan_points(
      launch::parse_sweep({"optimizer.lr=1,2", "optimizer.galore.lr=3,4", "data.train=a/b,c"}, 0, 0));
  CHECK(same[0].name == "optimizer.lr=1,optimizer.galore.lr=3,train=a_b");
  CHECK(same.size() == 8);
}

TEST_CASE("sweep plan: random draws stay in range, are repeatable, and unique by name", "[launch]") {
  const auto spec = launch::parse_sweep({"optimizer.lr=loguniform(1e-5,1e-2)", "trainer.grad_accum_steps=randint(1,4)",
                                         "optimizer.weight_decay=uniform(0,0.1)", "run.seed=1,2"},
                                        50, 7);
  const auto a = launch::plan_points(spec), b = launch::plan_points(spec);
  REQUIRE(a.size() == 50);
  std::set<std::string> names, accum;
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].name == b[i].name);
    names.insert(a[i].name);
    const double lr = std::stod(a[i].overrides[0].substr(a[i].overrides[0].find('=') + 1));
    CHECK(lr >= 1e-5 * 0.999);
    CHECK(lr <= 1e-2 * 1.001);
    const std::string g = a[i].overrides[1].substr(a[i].overrides[1].find('=') + 1);
    CHECK((g == "1" || g == "2" || g == "3" || g == "4"));
    accum.insert(g);
    const double wd = std::stod(a[i].overrides[2].substr(a[i].overrides[2].find('=') + 1));
    CHECK(wd >= 0);
    CHECK(wd <= 0.1);
  }
  CHECK(names.size() == 50);
  CHECK(accum.size() == 4);  // every integer drawn in 50 trials
  CHECK(launch::plan_points(launch::parse_sweep({"optimizer.lr=loguniform(1e-5,1e-2)"}, 5, 8))[0].name != a[0].name);
}

TEST_CASE("sweep plan: mistakes are refused with the argument named", "[launch]") {
  auto refused = [](std::vector<std::string> args, int trials, const std::string& words) {
    try {
      launch::parse_sweep(args, trials, 0);
      FAIL("accepted");
    } catch (const util::UsageError& e) {
      CHECK_THAT(std::string(e.what()), Contains(words));
    }
  };
  refused({"optimizer.lr=loguniform(1e-5,1e-2)"}, 0, "needs --trials");
  refused({"optimizer.lr=loguniform(0,1e-2)"}, 4, "must be above 0");
  refused({"optimizer.lr=uniform(2,1)"}, 4, "low is not below high");
  refused({"optimizer.lr=uniform(a,1)"}, 4, "not numbers");
  refused({"optimizer.lr=uniform(1)"}, 4, "two numbers");
  refused({"trainer.grad_accum_steps=randint(1.5,3)"}, 4, "whole numbers");
  refused({"optimizer.lr=1,,2"}, 0, "empty choice");
  refused({"optimizer.lr=1,2", "optimizer.lr=3,4"}, 0, "swept twice");
  refused({"optimizer.lr=1e-3"}, 0, "nothing to sweep");
}
