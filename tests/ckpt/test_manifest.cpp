// The manifest's JSON form: a round trip, and a CheckpointError naming the file and the field for
// every malformed manifest.
#include <functional>

#include <catch2/catch.hpp>

#include "ckpt/manifest.h"
#include "util/error.h"

using namespace hftrain;
using Catch::Matchers::Contains;
using Json = nlohmann::json;

namespace {

ckpt::Manifest sample() {
  ckpt::Manifest m;
  m.step = 42;
  m.config_hash = "abc";
  m.files.push_back({"model.safetensors",
                     1234,
                     std::string(32, 'a'),
                     {{"w", {"F32", {2, 3}}}, {"b", {"BF16", {3}}}, {"s", {"I64", {}}}}});
  m.files.push_back({"rng/rank0.json", 10, std::string(32, '0'), {}});
  m.extra = {{"world_size", 2}};
  return m;
}

std::string manifest_error(const Json& j) {
  try {
    ckpt::Manifest::from_json(j, "/run/checkpoint-42/manifest.json");
  } catch (const util::CheckpointError& e) {
    return e.what();
  }
  FAIL("expected a CheckpointError for " << j.dump());
  return {};
}

}  // namespace

TEST_CASE("manifest JSON round trip", "[ckpt][manifest]") {
  const ckpt::Manifest m = sample();
  const Json j = m.to_json();
  CHECK(j["checksum_algorithm"] == "xxh3-128");
  const ckpt::Manifest back = ckpt::Manifest::from_json(Json::parse(j.dump()), "manifest.json");
  CHECK(back.format_version == 1);
  CHECK(back.step == 42);
  CHECK(back.config_hash == "abc");
  REQUIRE(back.files.size() == 2);
  CHECK(back.files[0].path == "model.safetensors");
  CHECK(back.files[0].size == 1234);
  CHECK(back.files[0].tensors == m.files[0].tensors);
  CHECK(back.files[1].tensors.empty());
  CHECK(back.extra == m.extra);
  REQUIRE(back.find("rng/rank0.json"));
  CHECK(back.find("rng/rank0.json")->size == 10);
  CHECK_FALSE(back.find("nope"));
  ckpt::Manifest no_extra = sample();
  no_extra.extra = nullptr;
  CHECK_FALSE(no_extra.to_json().contains("extra"));
  CHECK(ckpt::Manifest::from_json(no_extra.to_json(), "m").extra.is_null());
}

TEST_CASE("a malformed manifest names the file and the field", "[ckpt][manifest]") {
  const Json good = sample().to_json();
  auto with = [&](const std::function<void(Json&)>& edit) {
    Json j = good;
    edit(j);
    return manifest_error(j);
  };
  CHECK_THAT(manifest_error(Json::array()),
             Contains("/run/checkpoint-42/manifest.json") && Contains("is an array, not an object"));
  CHECK_THAT(with([](Json& j) { j.erase("step"); }), Contains("step is missing"));
  CHECK_THAT(with([](Json& j) { j["step"] = -1; }), Contains("step is -1, outside [0, "));
  CHECK_THAT(with([](Json& j) { j["format_version"] = 2; }),
             Contains("format_version is 2") && Contains("newer"));
  CHECK_THAT(with([](Json& j) { j["checksum_algorithm"] = "md5"; }),
             Contains("checksum_algorithm"));
  CHECK_THAT(with([](Json& j) { j["config_hash"] = 5; }), Contains("config_hash is an integer, not a string"));
  CHECK_THAT(with([](Json& j) { j["files"] = Json::object(); }), Contains("files is an object, not an array"));
  CHECK_THAT(with([](Json& j) { j["files"][1]["path"] = "../../etc/passwd"; }),
             Contains("files[1].path is not a relative path"));
  CHECK_THAT(with([](Json& j) { j["files"][1]["path"] = "/etc/passwd"; }),
             Contains("files[1].path"));
  CHECK_THAT(with([](Json& j) { j["files"][1]["path"] = "model.safetensors"; }),
             Contains("repeats model.safetensors"));
  CHECK_THAT(with([](Json& j) { j["files"][0]["size"] = "12"; }), Contains("files[0].size"));
  CHECK_THAT(with([](Json& j) { j["files"][0]["checksum"] = "ABC"; }),
             Contains("files[0].checksum"));
  CHECK_THAT(with([](Json& j) {
               j["files"][0]["tensors"]["w"]["shape"] = {2, -3};
             }),
             Contains("files[0].tensors.'w'.shape"));
  CHECK_THAT(with([](Json& j) { j["files"][0]["tensors"]["w"].erase("dtype"); }),
             Contains("dtype is missing"));
}

TEST_CASE("safe relative paths", "[ckpt][manifest]") {
  for (const char* ok : {"a", "a/b.json", "model-00001-of-00002.safetensors", "..a", "a..b"})
    CHECK(ckpt::is_safe_relative_path(ok));
  for (const char* bad : {"", "/a", "a/../b", "..", ".", "a//b", "a/", "./a"})
    CHECK_FALSE(ckpt::is_safe_relative_path(bad));
}
