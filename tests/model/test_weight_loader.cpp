// load_weights on its own, with small made-up rules: pieces (row ranges, transposed) copied from
// renamed stored tensors with their dtype converted; every difference in one message with nothing
// changed; and what a loader may tolerate (dropped tensors, optional groups absent as a whole),
// and what it may not (a group stored in part, one tensor under two names).
#include "../torch_catch.h"  // first: see the file

#include <map>

#include "model/weights/weight_loader.h"
#include "util/error.h"

using namespace hftrain;

namespace {

model::WeightRules test_rules() {
  model::WeightRules rules;
  rules.expected = "the test model";
  rules.hint = "a test hint";
  rules.key_of = [](const std::string& name) {
    return name.starts_with("m.") ? name.substr(2) : name;
  };
  return rules;
}

util::CheckpointError load_error(const model::TensorList& params, const model::TensorList& stored,
                                 const model::WeightRules& rules) {
  std::vector<torch::Tensor> before;
  for (const auto& [name, p] : params) before.push_back(p.clone());
  try {
    model::load_weights(params, model::TensorListSource(stored, "mem"), rules);
  } catch (const util::CheckpointError& e) {
    for (size_t i = 0; i < params.size(); ++i)
      CHECK(torch::equal(params[i].second, before[i]));  // untouched
    return e;
  }
  FAIL("expected a CheckpointError");
  return util::CheckpointError("");
}

}  // namespace

TEST_CASE("load_weights copies pieces, transposed and converted, from renamed tensors",
          "[model][weights]") {
  const auto a = torch::zeros({2, 3}).requires_grad_(true);
  const auto fused = torch::zeros({5, 2}).requires_grad_(true);
  const model::TensorList params{{"a.weight", a}, {"fused", fused}};
  auto rules = test_rules();
  rules.pieces_of = [](const std::string& name,
                       const torch::Tensor&) -> std::vector<model::WeightPiece> {
    if (name == "a.weight") return {{"a", 0, -1, /*transposed=*/true}};
    return {{"f.q", 0, 2}, {"f.kv", 2, 3}};
  };
  const auto a_stored = torch::arange(6, torch::kFloat32).reshape({3, 2}).to(torch::kBFloat16);
  const auto q = torch::full({2, 2}, 1.5), kv = torch::full({3, 2}, -2.0);
  const auto report = model::load_weights(
      params, model::TensorListSource({{"m.a", a_stored}, {"f.q", q}, {"f.kv", kv}}, "mem"), rules);
  CHECK(torch::equal(a, a_stored.t().to(torch::kFloat32)));
  CHECK(torch::equal(fused, torch::cat({q, kv})));
  CHECK(report.initialised.empty());
  CHECK(report.dropped.empty());
  CHECK(report.describe().empty());
}

TEST_CASE("load_weights lists every difference in one message and changes nothing",
          "[model][weights]") {
  const model::TensorList params{
      {"w", torch::zeros({2, 2})}, {"b", torch::zeros({2})}, {"x", torch::zeros({3})}};
  const model::TensorList stored{{"m.w", torch::ones({2, 2}, torch::kInt64)},  // wrong dtype
                                 {"b", torch::ones({3})},                      // wrong shape
                                 {"y", torch::ones({3})}};                     // extra; no x
  const auto e = load_error(params, stored, test_rules());
  CHECK(std::string(e.what()) ==
        "mem does not match the test model: missing x; unexpected y; wrong shape or type "
        "m.w (Long [2, 2], expected [2, 2] floating point), "
        "b (Float [3], expected [2] floating point)");
  CHECK(e.hint() == "a test hint");

  // A transposed piece is expected in its stored orientation, a row range in its own rows.
  auto rules = test_rules();
  rules.pieces_of = [](const std::string& name,
                       const torch::Tensor&) -> std::vector<model::WeightPiece> {
    if (name == "w") return {{"w", 0, -1, true}};
    return {{"b.lo", 0, 1}, {"b.hi", 1, 1}};
  };
  const model::TensorList fused{{"w", torch::zeros({3, 2})}, {"b", torch::zeros({2})}};
  const model::TensorList pieces{
      {"w", torch::ones({3, 2})}, {"b.lo", torch::ones({1})}, {"b.hi", torch::ones({2})}};
  CHECK(std::string(load_error(fused, pieces, rules).what()) ==
        "mem does not match the test model: wrong shape or type "
        "w (Float [3, 2], expected [2, 3] floating point), "
        "b.hi (Float [2], expected [1] floating point)");
}

TEST_CASE("load_weights tolerates what the rules allow, and reports it", "[model][weights]") {
  const model::TensorList params{
      {"body", torch::zeros({2})}, {"head.w", torch::zeros({2})}, {"head.b", torch::zeros({1})}};
  auto rules = test_rules();
  rules.droppable = [](const std::string& key) { return key.starts_with("buffer."); };
  rules.optional_group = [](const std::string& name) {
    return name.starts_with("head.") ? "head." : "";
  };

  // A group absent as a whole keeps its initialisation; a droppable tensor is dropped.
  const auto report = model::load_weights(
      params,
      model::TensorListSource({{"body", torch::ones({2})}, {"m.buffer.ids", torch::arange(4)}},
                              "mem"),
      rules);
  CHECK(torch::equal(params[0].second, torch::ones({2})));
  CHECK(report.initialised == std::vector<std::string>{"head.w", "head.b"});
  CHECK(report.dropped == std::vector<std::string>{"m.buffer.ids"});
  CHECK(report.describe() ==
        "newly initialised (not in the checkpoint, train them): head.w, head.b; "
        "not used from the checkpoint: m.buffer.ids");

  // A group stored in part is missing the rest.
  CHECK(std::string(
            load_error(params, {{"body", torch::ones({2})}, {"head.w", torch::ones({2})}}, rules)
                .what()) == "mem does not match the test model: missing head.b");
  // Two stored names for one tensor: the second (in name order) is unexpected.
  CHECK(std::string(
            load_error(params, {{"body", torch::ones({2})}, {"m.body", torch::ones({2})}}, rules)
                .what()) == "mem does not match the test model: unexpected m.body");
}

TEST_CASE("load_weights hands over what the rules take, after checking it, and copies the rest",
          "[model][weights]") {
  const auto a = torch::zeros({2, 3}).requires_grad_(true);
  const auto fused = torch::zeros({5, 2}).requires_grad_(true);
  const model::TensorList params{{"a.weight", a}, {"fused", fused}};
  auto rules = test_rules();
  // Pieces listed out of row order: the hand-over sorts them.
  rules.pieces_of = [](const std::string& name, const torch::Tensor&) -> std::vector<model::WeightPiece> {
    if (name == "a.weight") return {{"a", 0, -1, /*transposed=*/true}};
    return {{"f.kv", 2, 3}, {"f.q", 0, 2}};
  };
  std::map<std::string, std::vector<torch::Tensor>> taken;
  rules.handed_over = [](const std::string& name) { return name == "fused" || name == "a.weight"; };
  rules.take = [&](const std::string& name, std::vector<torch::Tensor> pieces) { taken[name] = std::move(pieces); };
  const auto a_stored = torch::arange(6, torch::kFloat32).reshape({3, 2}).to(torch::kBFloat16);
  const auto q = torch::full({2, 2}, 1.5), kv = torch::full({3, 2}, -2.0);
  model::load_weights(params, model::TensorListSource({{"m.a", a_stored}, {"f.q", q}, {"f.kv", kv}}, "mem"), rules);
  REQUIRE(taken.size() == 2);
  REQUIRE(taken["fused"].size() == 2);
  CHECK(torch::equal(taken["fused"][0], q));   // row order
  CHECK(torch::equal(taken["fused"][1], kv));
  REQUIRE(taken["a.weight"].size() == 1);
  CHECK(taken["a.weight"][0].scalar_type() == torch::kBFloat16);  // as stored, transposed back
  CHECK(torch::equal(taken["a.weight"][0], a_stored.t()));
  CHECK(fused.abs().sum().item<double>() == 0);  // not copied into
  CHECK(a.abs().sum().item<double>() == 0);

  // A handed-over tensor of the wrong shape is refused like any other, before anything is taken.
  taken.clear();
  const auto bad = torch::full({4, 2}, 1.0);
  const auto e = load_error(params, {{"m.a", a_stored}, {"f.q", q}, {"f.kv", bad}}, rules);
  CHECK_THAT(e.what(), Catch::Matchers::Contains("f.kv"));
  CHECK(taken.empty());
}
