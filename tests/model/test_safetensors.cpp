#include "../torch_catch.h"  // first: see the file
#include <fstream>


#include "../config/helpers.h"
#include "model/safetensors.h"
#include "model/spec.h"

using namespace hftrain;
using Catch::Matchers::Contains;

namespace {
// Builds a file from a header text and `data_bytes` bytes of data.
std::filesystem::path make_file(const test::TempDir& d, const std::string& name, const std::string& header,
                                size_t data_bytes, uint64_t claimed_len = 0) {
  std::string out(8, '\0');
  uint64_t len = claimed_len ? claimed_len : header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((len >> (8 * i)) & 0xff);
  out += header;
  out.append(data_bytes, '\x01');
  return d.write(name, out);
}
}  // namespace

TEST_CASE("safetensors round trip keeps names, dtypes, shapes, values and metadata", "[model][safetensors]") {
  test::TempDir d;
  model::TensorList in = {{"b", torch::arange(6, torch::kInt64).reshape({2, 3})},
                          {"a", torch::randn({4}).to(torch::kBFloat16)},
                          {"c", torch::tensor({true, false})},
                          {"e", torch::empty({0, 3})},
                          {"f", torch::randn({2, 2}, torch::kFloat16)}};
  model::write_safetensors(d.path() / "x.safetensors", in, {{"format", "pt"}});
  std::map<std::string, std::string> meta;
  auto out = model::read_safetensors(d.path() / "x.safetensors", &meta);
  CHECK(meta.at("format") == "pt");
  REQUIRE(out.size() == in.size());
  for (const auto& [name, t] : in) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == name; });
    REQUIRE(it != out.end());
    CHECK(it->second.scalar_type() == t.scalar_type());
    CHECK(it->second.sizes() == t.sizes());
    CHECK(torch::equal(it->second, t));
  }
}

TEST_CASE("hostile safetensors files get clear errors", "[model][safetensors]") {
  test::TempDir d;
  auto error = [](const std::filesystem::path& p) -> std::string {
    try {
      model::read_safetensors(p);
    } catch (const util::CheckpointError& e) {
      return e.what();
    }
    FAIL("expected a CheckpointError for " << p);
    return {};
  };
  CHECK_THAT(error(d.write("short", "abc")), Contains("shorter than"));
  CHECK_THAT(error(make_file(d, "lie", "{}", 0, uint64_t{1} << 60)), Contains("exceeds the file"));
  CHECK_THAT(error(make_file(d, "notjson", "{nope", 0)), Contains("not JSON"));
  CHECK_THAT(error(make_file(d, "array", "[1, 2]", 0)), Contains("not a JSON object"));
  CHECK_THAT(error(make_file(d, "dtype", R"({"a":{"dtype":"F7","shape":[1],"data_offsets":[0,4]}})", 4)),
             Contains("unsupported dtype"));
  CHECK_THAT(error(make_file(d, "outside", R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8)),
             Contains("outside"));
  CHECK_THAT(error(make_file(d, "count", R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8)),
             Contains("need 12"));
  CHECK_THAT(error(make_file(d, "overlap",
                             R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                             12)),
             Contains("not contiguous"));
  CHECK_THAT(error(make_file(d, "dup",
                             R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
                             2)),
             Contains("duplicate tensor name 'a'"));
  CHECK_THAT(error(make_file(d, "trailing", R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 5)),
             Contains("trailing bytes"));
  CHECK_THAT(error(make_file(d, "hugeshape",
                             R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,4]}})", 4)),
             Contains("overflows"));
  CHECK_THAT(error(d.path()), Contains("not a regular file"));
}

TEST_CASE("model spec JSON round trip and validation", "[model]") {
  auto cfg = test::resolve(test::kMinimal, {"model.arch=llama", "model.n_kv_head=4", "model.d_model=256", "model.n_head=8"}).values;
  auto spec = model::ModelSpec::from_config(cfg.model);
  CHECK(spec.d_ff == 704);  // 8/3 x 256 = 682 -> 704
  CHECK_FALSE(spec.tie_embeddings);
  CHECK(spec.norm_eps == 1e-6);
  auto back = model::ModelSpec::from_json(spec.to_json(), "model.json");
  CHECK(back.to_json() == spec.to_json());
  CHECK_THROWS_AS(model::ModelSpec::from_json("{\"format\": \"other\"}", "m.json"), util::CheckpointError);
  CHECK_THROWS_AS(model::ModelSpec::from_json("not json", "m.json"), util::CheckpointError);
}
