// verify_checkpoint finds every kind of damage and names the file; newest_verified falls back
// past torn or tampered checkpoints and says why.
#include "../torch_catch.h"  // first: see the file

#include <fstream>

#include "ckpt/layout.h"
#include "ckpt/verify.h"
#include "helpers.h"
#include "util/hash.h"
#include "util/strings.h"

using namespace hftrain;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using Json = nlohmann::json;

namespace {

void overwrite(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

std::string problems_of(const fs::path& dir) {
  const auto report = ckpt::verify_checkpoint(dir);
  CHECK_FALSE(report.ok());
  return util::join(report.problems, "\n");
}

// Rewrites the manifest after `edit`.
void edit_manifest(const fs::path& dir, const std::function<void(Json&)>& edit) {
  Json j = Json::parse(test::read_text(dir / "manifest.json"));
  edit(j);
  overwrite(dir / "manifest.json", j.dump(2));
}

Json& file_entry(Json& manifest, const std::string& path) {
  for (auto& f : manifest["files"]) {
    if (f["path"] == path) return f;
  }
  FAIL("no " << path << " in the manifest");
  return manifest;
}

}  // namespace

TEST_CASE("verify finds damage and names the file", "[ckpt][verify]") {
  test::TempDir d;
  const fs::path dir = test::commit_checkpoint(d.path(), 10);
  REQUIRE(ckpt::verify_checkpoint(dir).ok());
  const fs::path weights = dir / "model.safetensors";
  const std::string original = test::read_text(weights);

  SECTION("a flipped byte") {
    std::string bytes = original;
    bytes[bytes.size() - 3] ^= 0x01;
    overwrite(weights, bytes);
    const std::string p = problems_of(dir);
    CHECK_THAT(p, Contains("model.safetensors") && Contains("checksum"));
  }
  SECTION("a truncated file") {
    overwrite(weights, original.substr(0, original.size() - 10));
    CHECK_THAT(problems_of(dir),
               Contains("model.safetensors: " + std::to_string(original.size() - 10) + " bytes") &&
                   Contains("the manifest says " + std::to_string(original.size())));
  }
  SECTION("a deleted file") {
    fs::remove(dir / "notes" / "readme.txt");
    CHECK_THAT(problems_of(dir), Contains("notes/readme.txt: listed in the manifest but missing"));
  }
  SECTION("a missing manifest") {
    fs::remove(dir / "manifest.json");
    const auto report = ckpt::verify_checkpoint(dir);
    REQUIRE(report.problems.size() == 1);
    CHECK(report.problems[0] == "manifest.json is missing: the save did not finish");
    CHECK_FALSE(report.manifest);
  }
  SECTION("an unparsable manifest") {
    overwrite(dir / "manifest.json", "{\"step\": ");
    CHECK_THAT(problems_of(dir), Contains("manifest.json") && Contains("not valid JSON"));
  }
  SECTION("a manifest with a bad field") {
    edit_manifest(dir, [](Json& j) { j["files"][0]["size"] = "big"; });
    CHECK_THAT(problems_of(dir), Contains("files[0].size"));
  }
  SECTION("a tensor renamed in the header, the checksum made to match") {
    std::string bytes = original;
    const size_t at = bytes.find("\"layer.bias\"");
    REQUIRE(at != std::string::npos);
    bytes.replace(at, 12, "\"layer.bia2\"");  // same length: offsets and size stay valid
    overwrite(weights, bytes);
    edit_manifest(dir, [&](Json& j) {
      file_entry(j, "model.safetensors")["checksum"] = util::hash_hex(bytes);
    });
    const auto report = ckpt::verify_checkpoint(dir);
    REQUIRE(report.problems.size() == 1);
    CHECK_THAT(report.problems[0],
               Contains("model.safetensors: its tensors differ from the manifest") &&
                   Contains("missing layer.bias") && Contains("not in the manifest layer.bia2"));
  }
  SECTION("a tensor whose recorded shape and dtype differ") {
    edit_manifest(dir, [](Json& j) {
      file_entry(j, "model.safetensors")["tensors"]["layer.weight"] = {{"dtype", "F16"},
                                                                       {"shape", {4, 3}}};
    });
    CHECK_THAT(problems_of(dir),
               Contains("changed layer.weight (F32 [3, 4], the manifest says F16 [4, 3])"));
  }
  SECTION("an unreadable safetensors header") {
    std::string bytes = original;
    bytes[0] = '\xff';  // the header length now exceeds the file
    overwrite(weights, bytes);
    edit_manifest(dir, [&](Json& j) {
      file_entry(j, "model.safetensors")["checksum"] = util::hash_hex(bytes);
    });
    CHECK_THAT(problems_of(dir),
               Contains("model.safetensors: the safetensors header is unreadable"));
  }
  SECTION("a manifest from another step") {
    edit_manifest(dir, [](Json& j) { j["step"] = 11; });
    CHECK_THAT(problems_of(dir), Contains("step 11, but the folder is checkpoint-10"));
  }
  SECTION("an extra file is a note, not a problem") {
    d.write("checkpoint-10/stray.txt", "x");
    const auto report = ckpt::verify_checkpoint(dir);
    CHECK(report.ok());
    REQUIRE(report.notes.size() == 1);
    CHECK_THAT(report.notes[0], Contains("stray.txt"));
  }
  SECTION("no folder at all") {
    CHECK_THAT(problems_of(d.path() / "checkpoint-99"), Contains("does not exist"));
  }
}

TEST_CASE("newest_verified skips torn and tampered newer checkpoints and says why",
          "[ckpt][verify]") {
  test::TempDir d;
  CHECK_FALSE(ckpt::newest_verified(d.path()));
  for (int64_t step : {9, 10, 100}) test::commit_checkpoint(d.path(), step);
  auto choice = ckpt::newest_verified(d.path());
  REQUIRE(choice);
  CHECK(choice->chosen.step == 100);  // by number, not by name
  CHECK(choice->skipped.empty());

  fs::remove(d.path() / "checkpoint-100" / "manifest.json");  // torn: the save did not finish
  d.write("checkpoint-10/trainer_state.json", "{\"step\": 10, \"loss\": 9.9}");  // tampered
  choice = ckpt::newest_verified(d.path());
  REQUIRE(choice);
  CHECK(choice->chosen.step == 9);
  REQUIRE(choice->skipped.size() == 2);
  CHECK(choice->skipped[0].entry.step == 100);
  CHECK_THAT(util::join(choice->skipped[0].problems, ""), Contains("manifest.json is missing"));
  CHECK(choice->skipped[1].entry.step == 10);
  CHECK_THAT(util::join(choice->skipped[1].problems, ""), Contains("trainer_state.json"));

  fs::remove(d.path() / "checkpoint-9" / "model.safetensors");
  std::vector<ckpt::SkippedCheckpoint> failed;
  CHECK_FALSE(ckpt::newest_verified(d.path(), &failed));
  REQUIRE(failed.size() == 3);
  CHECK(failed[2].entry.step == 9);
}
