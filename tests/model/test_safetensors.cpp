// safetensors reader and writer: every dtype round-trips byte for byte, and hostile files and
// unwritable tensor lists get clear errors. (Interop with the Python library:
// tests/conformance/safetensors_roundtrip.py; the header parser's fuzz target: tests/fuzz.)
#include "../torch_catch.h"  // first: see the file
#include <cstring>
#include <fstream>

#include "../config/helpers.h"
#include "model/weights/safetensors.h"
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

// A tensor's bytes (NaN payloads and float8 included, where torch::equal would not do).
std::string bytes_of(const torch::Tensor& t) {
  const auto c = t.contiguous();
  return {static_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.numel()) * c.element_size()};
}

// A tensor of `type` whose bytes follow a pattern (0 or 1 per byte for bool).
torch::Tensor patterned(torch::ScalarType type, std::vector<int64_t> shape, unsigned seed) {
  auto t = torch::empty(shape, torch::TensorOptions().dtype(type));
  auto* p = static_cast<unsigned char*>(t.data_ptr());
  const size_t n = static_cast<size_t>(t.numel()) * t.element_size();
  for (size_t i = 0; i < n; ++i) {
    const unsigned v = static_cast<unsigned>(i) * 37u + seed * 101u + 11u;
    p[i] = static_cast<unsigned char>(type == torch::kBool ? v % 3 == 0 : v % 256);
  }
  return t;
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

TEST_CASE("safetensors round trip of every supported dtype, scalars and empty tensors", "[model][safetensors]") {
  test::TempDir d;
  const std::vector<std::vector<int64_t>> shapes = {{3, 5}, {7}, {}, {2, 0, 3}, {1, 3, 1, 5}};
  model::TensorList in;
  unsigned seed = 0;
  for (const auto& name : model::safetensors_dtype_names()) {
    const auto type = model::safetensors_torch_type(name);
    CHECK(model::safetensors_dtype_name(type) == name);
    CHECK(model::safetensors_dtype_size(name) == static_cast<size_t>(c10::elementSize(type)));
    for (size_t s = 0; s < shapes.size(); ++s) {
      in.emplace_back(name + "." + std::to_string(s), patterned(type, shapes[s], seed++));
    }
  }
  // A non-contiguous view is written as its values.
  in.emplace_back("transposed", patterned(torch::kInt16, {3, 4}, 99).t());
  model::write_safetensors(d.path() / "all.safetensors", in, {{"format", "pt"}});
  const auto header = model::read_safetensors_header(d.path() / "all.safetensors");
  CHECK(header.data_start % 8 == 0);
  const auto out = model::read_safetensors(d.path() / "all.safetensors");
  REQUIRE(out.size() == in.size());
  for (const auto& [name, t] : in) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == name; });
    REQUIRE(it != out.end());
    INFO(name);
    CHECK(it->second.scalar_type() == t.scalar_type());
    CHECK(it->second.sizes() == t.sizes());
    CHECK(bytes_of(it->second) == bytes_of(t));
  }
}

TEST_CASE("empty tensors share their offset with the next tensor, in any header order", "[model][safetensors]") {
  for (
      const std::string json :
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"z":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}})",
       R"({"z":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}})",
       R"({"e":{"dtype":"U8","shape":[0],"data_offsets":[4,4]},)"
       R"("z":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})"}) {
    std::string file(8, '\0');
    file[0] = static_cast<char>(json.size());
    file += json + "abcd";
    const auto h = model::parse_safetensors_header(file, file.size(), "mem");
    REQUIRE(h.tensors.size() == 2);
    CHECK(h.tensors[0].begin <= h.tensors[1].begin);
  }
}

TEST_CASE("safetensors writer resolves lazy conjugate and negative views", "[model][safetensors]") {
  test::TempDir d;
  auto z = torch::complex(torch::arange(4, torch::kFloat32), torch::ones({4}));
  model::write_safetensors(d.path() / "c.safetensors", {{"conj", z.conj()}, {"neg", torch::imag(z.conj())}});
  auto out = model::read_safetensors(d.path() / "c.safetensors");
  REQUIRE(out.size() == 2);
  CHECK(torch::equal(out[0].second, z.conj().resolve_conj()));
  CHECK(torch::equal(out[1].second, -torch::ones({4})));
}

TEST_CASE("safetensors writer refuses what the format cannot hold", "[model][safetensors]") {
  test::TempDir d;
  const auto p = d.path() / "x.safetensors";
  auto t = torch::zeros({2});
  CHECK_THROWS_AS(model::write_safetensors(p, {{"a", torch::zeros({2}, torch::kComplexDouble)}}), util::IoError);
  CHECK_THROWS_AS(model::write_safetensors(p, {{"a", torch::zeros({2}, torch::kFloat8_e8m0fnu)}}), util::IoError);
  CHECK_THROWS_AS(model::write_safetensors(p, {{"a", t}, {"a", t}}), util::IoError);
  CHECK_THROWS_AS(model::write_safetensors(p, {{"__metadata__", t}}), util::IoError);
  CHECK_THROWS_AS(model::write_safetensors(p, {{"bad\xff", t}}), util::IoError);
  CHECK_THROWS_AS(model::write_safetensors(p, {{"a", t}}, {{"k", "bad\xff"}}), util::IoError);
  CHECK_FALSE(std::filesystem::exists(p));
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
  CHECK_THAT(
      error(make_file(
          d, "overlap",
          R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
          R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
          12)),
      Contains("not contiguous"));
  CHECK_THAT(
      error(make_file(
          d, "dup",
          R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
          R"("a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
          2)),
      Contains("duplicate tensor name 'a'"));
  CHECK_THAT(error(make_file(d, "trailing", R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", 5)),
             Contains("trailing bytes"));
  CHECK_THAT(
      error(make_file(d, "hugeshape",
                      R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,4]}})", 4)),
      Contains("overflows"));
  // [0, 2^64-1] holds no bytes but no LibTorch shape has a dimension that large.
  CHECK_THAT(error(make_file(d, "zerohuge",
                             R"({"a":{"dtype":"F32","shape":[0,18446744073709551615],"data_offsets":[0,0]}})", 0)),
             Contains("overflows"));
  CHECK_THAT(error(make_file(d, "zerobig",
                             R"({"a":{"dtype":"F32","shape":[0,4294967296,4294967296],"data_offsets":[0,0]}})", 0)),
             Contains("overflows"));
  CHECK_THAT(error(make_file(d, "negative", R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}})", 0)),
             Contains("bad shape"));
  CHECK_THAT(error(make_file(d, "float", R"({"a":{"dtype":"U8","shape":[1.0],"data_offsets":[0,1]}})", 1)),
             Contains("bad shape"));
  CHECK_THAT(error(make_file(d, "f4", R"({"a":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}})", 1)),
             Contains("unsupported dtype 'F4'"));
  CHECK_THAT(error(make_file(d, "metadata", R"({"__metadata__":{"k":1}})", 0)), Contains("is not a string"));
  // A bool byte must be 0 or 1 (make_file's data bytes are 1s, so write a 2 by hand).
  {
    auto p = make_file(d, "bool", R"({"a":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", 2);
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('\x02');
    f.close();
    CHECK_THAT(error(p), Contains("other than 0 or 1"));
  }
  // A shape nested as deep as the header is long is refused before parsing (util/json_depth.h);
  // one nested just within the limit gets the shape's own refusal, not a recursion.
  {
    const size_t depth = 2'000'000;
    std::string header = R"({"a":{"dtype":"F32","data_offsets":[0,0],"shape":[)";
    header.append(depth, '[');
    header.append(depth, ']');
    header += "]}}";
    CHECK_THAT(error(make_file(d, "deep", header, 0)), Contains("nested deeper than 256 levels"));
    std::string within = R"({"a":{"dtype":"F32","data_offsets":[0,0],"shape":[)";
    within.append(250, '[');
    within.append(250, ']');
    within += "]}}";
    CHECK_THAT(error(make_file(d, "within", within, 0)), Contains("bad shape"));
  }
  // Long names are cut in messages.
  {
    const std::string name(10'000, 'n');
    const std::string msg =
        error(make_file(d, "longname", R"({")" + name + R"(":{"dtype":"F7","shape":[],"data_offsets":[0,0]}})", 0));
    CHECK(msg.size() < 1000);
  }
  CHECK_THAT(error(d.path()), Contains("not a regular file"));
}

TEST_CASE("model spec JSON round trip and validation", "[model]") {
  auto cfg =
      test::resolve(test::kMinimal, {"model.arch=llama", "model.n_kv_head=4", "model.d_model=256", "model.n_head=8"})
          .values;
  auto spec = model::ModelSpec::from_config(cfg.model);
  CHECK(spec.d_ff == 704);  // 8/3 x 256 = 682 -> 704
  CHECK_FALSE(spec.tie_embeddings);
  CHECK(spec.norm_eps == 1e-6);
  auto back = model::ModelSpec::from_json(spec.to_json(), "model.json");
  CHECK(back.to_json() == spec.to_json());
  CHECK_THROWS_AS(model::ModelSpec::from_json("{\"format\": \"other\"}", "m.json"), util::CheckpointError);
  CHECK_THROWS_AS(model::ModelSpec::from_json("not json", "m.json"), util::CheckpointError);
}
