// Model weights sharded in the Hugging Face layout: the writer's shards load back through
// model::load_model_dir, and a sharded directory whose index and shards disagree is a
// CheckpointError naming the file.
#include "../torch_catch.h"  // first: see the file

#include <fstream>
#include <functional>
#include <set>

#include "ckpt/verify.h"
#include "helpers.h"
#include "model/weights/saved_model.h"
#include "model/decoder/transformer.h"
#include "util/strings.h"

using namespace hftrain;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Json = nlohmann::json;

namespace {

model::Transformer tiny_model() {
  model::ModelSpec s;
  s.arch = config::ModelArch::kGpt2;
  s.n_layer = 2, s.n_head = 2, s.n_kv_head = 2, s.d_model = 16, s.d_ff = 32;
  s.max_seq_len = 16, s.vocab_size = 258;
  torch::manual_seed(3);
  return model::Transformer(s);
}

model::TensorList weights_of(const model::Transformer& m) {
  model::TensorList out;
  for (const auto& [name, p] : m->parameters_by_name()) out.emplace_back(name, p.detach().clone());
  return out;
}

uint64_t bytes_of(const model::TensorList& tensors) {
  uint64_t n = 0;
  for (const auto& [name, t] : tensors) n += static_cast<uint64_t>(t.numel()) * t.element_size();
  return n;
}

torch::Tensor logits_of(model::Transformer m) {
  torch::NoGradGuard no_grad;
  m->eval();
  return m->forward(torch::tensor({{1, 2, 3, 4, 5}}, torch::kInt64));
}

// A checkpoint holding a model directory with weights sharded at `max_shard_bytes`.
fs::path save_model(const fs::path& run, const model::Transformer& m, uint64_t max_shard_bytes) {
  ckpt::CheckpointWriter w(run, 1, util::MapEnvironment());
  for (const auto& [name, text] : model::model_text_files(m, tokenizer::TokenizerKind::kByte, nullptr))
    w.add_bytes(name, text);
  w.add_sharded_safetensors("model", weights_of(m), max_shard_bytes, {{"format", "pt"}});
  return w.commit("h");
}

std::string load_error(const fs::path& dir) {
  try {
    model::load_model_dir(dir);
  } catch (const util::CheckpointError& e) {
    return e.what();
  }
  FAIL("expected a CheckpointError loading " << dir);
  return {};
}

}  // namespace

TEST_CASE("sharded weights load back through load_model_dir", "[ckpt][sharded]") {
  test::TempDir d;
  const auto m = tiny_model();
  const auto tensors = weights_of(m);
  const fs::path dir = save_model(d.path(), m, 4096);

  CHECK_FALSE(fs::exists(dir / "model.safetensors"));
  const Json index = Json::parse(test::read_text(dir / "model.safetensors.index.json"));
  CHECK(index["metadata"]["total_size"] == bytes_of(tensors));
  REQUIRE(index["weight_map"].size() == tensors.size());
  std::set<std::string> shards;
  for (const auto& [name, shard] : index["weight_map"].items())
    shards.insert(shard.get<std::string>());
  REQUIRE(shards.size() > 2);
  const std::string n = std::to_string(shards.size());
  CHECK(*shards.begin() == "model-00001-of-0000" + n + ".safetensors");
  CHECK(*shards.rbegin() == "model-0000" + n + "-of-0000" + n + ".safetensors");
  // The limit counts tensor bytes: a shard holds at most 4096 of them, or a single larger tensor.
  std::map<std::string, std::pair<int, uint64_t>> per_shard;  // tensors, bytes
  for (const auto& [name, t] : tensors) {
    auto& [count, bytes] = per_shard[index["weight_map"][name].get<std::string>()];
    ++count;
    bytes += static_cast<uint64_t>(t.numel()) * t.element_size();
  }
  for (const auto& [shard, usage] : per_shard) {
    INFO(shard);
    CHECK((usage.second <= 4096 || usage.first == 1));
  }
  // Filled in order: the weight map's shard numbers never decrease along the parameter order.
  std::string previous;
  for (const auto& [name, t] : tensors) {
    const std::string shard = index["weight_map"][name];
    CHECK(shard >= previous);
    previous = shard;
  }

  const auto report = ckpt::verify_checkpoint(dir);
  INFO(util::join(report.problems, "\n"));
  CHECK(report.ok());
  CHECK(report.manifest->files.size() ==
        shards.size() + 3);  // model.json, tokenizer.json, the index

  const auto loaded =
      model::load_model_dir(d.path());  // the run directory resolves to checkpoint-1
  CHECK(loaded.dir == dir);
  CHECK(torch::equal(logits_of(loaded.model), logits_of(m)));
}

TEST_CASE("weights that fit one shard are a single model.safetensors", "[ckpt][sharded]") {
  test::TempDir d;
  const auto m = tiny_model();
  const fs::path dir = save_model(d.path(), m, uint64_t{1} << 30);
  CHECK(fs::exists(dir / "model.safetensors"));
  CHECK_FALSE(fs::exists(dir / "model.safetensors.index.json"));
  CHECK(torch::equal(logits_of(model::load_model_dir(dir).model), logits_of(m)));
}

TEST_CASE("a tensor larger than the shard limit gets a shard of its own", "[ckpt][sharded]") {
  test::TempDir d;
  ckpt::CheckpointWriter w(d.path(), 1, util::MapEnvironment());
  w.add_sharded_safetensors("weights",
                            {{"a", torch::zeros({10})},
                             {"big", torch::zeros({100})},
                             {"b", torch::zeros({10})},
                             {"c", torch::zeros({10})}},
                            100);
  const fs::path dir = w.commit("h");
  const Json map =
      Json::parse(test::read_text(dir / "weights.safetensors.index.json"))["weight_map"];
  CHECK(map["a"] == "weights-00001-of-00003.safetensors");
  CHECK(map["big"] == "weights-00002-of-00003.safetensors");
  CHECK(map["b"] == "weights-00003-of-00003.safetensors");
  CHECK(map["c"] == "weights-00003-of-00003.safetensors");
}

TEST_CASE("a sharded model whose index and shards disagree is a CheckpointError",
          "[ckpt][sharded]") {
  test::TempDir d;
  const auto m = tiny_model();
  const fs::path dir = save_model(d.path(), m, 4096);
  const fs::path index_path = dir / "model.safetensors.index.json";
  const Json index = Json::parse(test::read_text(index_path));
  auto rewrite = [&](const std::function<void(Json&)>& edit) {
    Json j = index;
    edit(j);
    std::ofstream(index_path, std::ios::trunc) << j.dump();
  };
  // `first`: a tensor whose shard holds others too (so the shard stays listed when it moves);
  // `other_shard`: any other shard.
  std::map<std::string, int> per_shard;
  for (const auto& [name, shard] : index["weight_map"].items())
    ++per_shard[shard.get<std::string>()];
  std::string first, first_shard, other_shard;
  for (const auto& [name, shard] : index["weight_map"].items()) {
    if (first.empty() && per_shard[shard.get<std::string>()] >= 2)
      first = name, first_shard = shard.get<std::string>();
  }
  for (const auto& [shard, count] : per_shard) {
    if (shard != first_shard) other_shard = shard;
  }
  REQUIRE_FALSE(first.empty());
  REQUIRE_FALSE(other_shard.empty());

  SECTION("a listed shard is missing") {
    fs::remove(dir / first_shard);
    CHECK_THAT(load_error(dir), Contains(index_path.string()) &&
                                    Contains("lists shard " + first_shard + ", which is missing"));
  }
  SECTION("a tensor in a shard but not in the map") {
    rewrite([&](Json& j) { j["weight_map"].erase(first); });
    CHECK_THAT(load_error(dir), Contains("not in the weight_map " + first));
  }
  SECTION("a tensor the map places in another shard") {
    rewrite([&](Json& j) { j["weight_map"][first] = other_shard; });
    CHECK_THAT(load_error(dir), Contains("in the wrong shard " + first + " (in " + first_shard +
                                         ", listed in " + other_shard + ")"));
  }
  SECTION("a weight_map entry that escapes the folder") {
    rewrite([&](Json& j) { j["weight_map"][first] = "../" + first_shard; });
    CHECK_THAT(load_error(dir), Contains("not a file name in the same folder"));
  }
  SECTION("no weight_map") {
    rewrite([&](Json& j) { j.erase("weight_map"); });
    CHECK_THAT(load_error(dir), Contains("not a safetensors index"));
  }
  SECTION("a tensor in two shards") {
    // Copy one shard's tensors into another shard file under its name too.
    const auto a = model::read_safetensors(dir / first_shard);
    auto b = model::read_safetensors(dir / other_shard);
    b.push_back(a.front());
    model::write_safetensors(dir / other_shard, b, {{"format", "pt"}});
    CHECK_THAT(load_error(dir), Contains("in more than one shard " + a.front().first));
  }
  SECTION("neither weights file") {
    fs::remove(index_path);
    CHECK_THAT(load_error(dir), Contains("model.safetensors is missing"));
  }
}
