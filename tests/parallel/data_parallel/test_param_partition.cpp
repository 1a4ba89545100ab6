// zero1's partition by whole parameters (parallel/data_parallel/param_partition.h): owners by size,
// and the state a rank keeps of a whole saved one.
#include "../../torch_catch.h"  // first: see the file

#include "parallel/data_parallel/param_partition.h"

using namespace hftrain;

TEST_CASE("partition by size: largest first, each to the least-loaded rank", "[dist]") {
  // 100 -> rank 0; 60 -> 1; 50 -> 1 (60 < 100); 40 -> 0 (100 < 110); 10 -> 1 (110 < 140).
  const auto owners = parallel::partition_by_size({10, 100, 40, 60, 50}, 2);
  CHECK(owners == std::vector<int>{1, 0, 0, 1, 1});
  // Ties go to the lower rank and then by parameter order: the same on every rank.
  CHECK(parallel::partition_by_size({5, 5, 5, 5}, 3) == std::vector<int>{0, 1, 2, 0});
  // More ranks than parameters: some own nothing; one rank owns everything.
  CHECK(parallel::partition_by_size({3, 2}, 4) == std::vector<int>{0, 1});
  CHECK(parallel::partition_by_size({3, 2, 1}, 1) == std::vector<int>{0, 0, 0});
  // Balanced within the largest parameter.
  std::vector<int64_t> sizes;
  for (int i = 1; i <= 40; ++i) sizes.push_back(i * 37 % 101 + 1);
  const auto spread = parallel::partition_by_size(sizes, 3);
  std::vector<int64_t> load(3, 0);
  for (size_t i = 0; i < sizes.size(); ++i) load[spread[i]] += sizes[i];
  CHECK(*std::max_element(load.begin(), load.end()) - *std::min_element(load.begin(), load.end()) <= 101);
}

TEST_CASE("only_owned keeps the tensors and step counts of the owned parameters", "[dist]") {
  optim::OptimizerState s;
  s.tensors = {{"a.weight/exp_avg", torch::zeros({2})},
               {"a.weight/ortho", torch::zeros({2, 1})},
               {"b.weight/exp_avg", torch::zeros({3})},
               {"layers.0.attn/x.weight/exp_avg", torch::zeros({1})}};
  s.meta = {{"optimizer", "galore_adamw"},
            {"steps", {{"a.weight", 3}, {"b.weight", 3}, {"layers.0.attn/x.weight", 1}}},
            {"groups", nlohmann::json::array()}};
  const auto kept = parallel::only_owned(s, {"a.weight", "layers.0.attn/x.weight"});
  REQUIRE(kept.tensors.size() == 3);
  CHECK(kept.tensors[0].first == "a.weight/exp_avg");
  CHECK(kept.tensors[1].first == "a.weight/ortho");
  CHECK(kept.tensors[2].first == "layers.0.attn/x.weight/exp_avg");  // the name is all before the last '/'
  CHECK(kept.meta["steps"] == nlohmann::json({{"a.weight", 3}, {"layers.0.attn/x.weight", 1}}));
  CHECK(kept.meta["optimizer"] == "galore_adamw");  // the rest as it was
  CHECK(parallel::only_owned(s, {}).tensors.empty());
}
