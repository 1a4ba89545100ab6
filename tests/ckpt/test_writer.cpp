// The checkpoint writer: what a committed checkpoint holds, what its manifest says, and how a
// save replaces, abandons or refuses.
#include "../torch_catch.h"  // first: see the file

#include "ckpt/layout.h"
#include "ckpt/verify.h"
#include "helpers.h"
#include "model/weights/safetensors.h"
#include "util/hash.h"
#include "util/strings.h"

using namespace hftrain;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {
size_t entries_in(const fs::path& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}
}  // namespace

TEST_CASE("a committed checkpoint holds its files, a manifest that lists them, and latest",
          "[ckpt][writer]") {
  test::TempDir d;
  const fs::path run = d.path() / "run";  // created by the writer
  ckpt::CheckpointWriter w(run, 20, util::MapEnvironment());
  CHECK(fs::is_directory(w.staging_dir()));
  CHECK(w.staging_dir().parent_path() == run);
  CHECK_THAT(w.staging_dir().filename().string(), Contains(".tmp-checkpoint-20-"));
  const auto tensors = test::small_tensors(3);
  w.add_safetensors("model.safetensors", tensors, {{"format", "pt"}});
  w.add_json("state/trainer.json", {{"step", 20}});
  w.add_bytes("config.yaml", "a: 1\n");
  const fs::path dir = w.commit("hash-1", {{"note", "x"}});

  CHECK(dir == run / "checkpoint-20");
  CHECK_FALSE(fs::exists(w.staging_dir()));
  CHECK(test::read_text(run / "latest") == "checkpoint-20\n");
  CHECK(test::read_text(dir / "config.yaml") == "a: 1\n");
  CHECK(nlohmann::json::parse(test::read_text(dir / "state/trainer.json"))["step"] == 20);
  std::map<std::string, std::string> meta;
  const auto back = model::read_safetensors(dir / "model.safetensors", &meta);
  CHECK(meta.at("format") == "pt");
  REQUIRE(back.size() == tensors.size());
  for (const auto& [name, t] : back) {
    auto it = std::find_if(tensors.begin(), tensors.end(),
                           [&](const auto& p) { return p.first == name; });
    REQUIRE(it != tensors.end());
    CHECK(torch::equal(t, it->second));
  }

  const auto report = ckpt::verify_checkpoint(dir);
  INFO(util::join(report.problems, "\n"));
  CHECK(report.ok());
  CHECK(report.notes.empty());
  REQUIRE(report.manifest);
  const ckpt::Manifest& m = *report.manifest;
  CHECK(m.step == 20);
  CHECK(m.config_hash == "hash-1");
  CHECK(m.extra["note"] == "x");
  REQUIRE(m.files.size() == 3);
  CHECK(m.files[0].path == "model.safetensors");  // in the order added
  CHECK(m.files[1].path == "state/trainer.json");
  CHECK(m.files[2].path == "config.yaml");
  for (const auto& f : m.files) {
    CHECK(f.size == fs::file_size(dir / f.path));
    CHECK(f.checksum == util::hash_file_hex(dir / f.path));
  }
  const auto& recorded = m.files[0].tensors;
  REQUIRE(recorded.size() == 4);
  CHECK(recorded.at("layer.weight") == ckpt::ManifestTensor{"F32", {3, 4}});
  CHECK(recorded.at("layer.bias") == ckpt::ManifestTensor{"BF16", {4}});
  CHECK(recorded.at("counts") == ckpt::ManifestTensor{"I64", {5}});
  CHECK(recorded.at("empty") == ckpt::ManifestTensor{"F32", {0, 2}});
  CHECK(m.files[1].tensors.empty());
  CHECK(entries_in(run) == 2);  // checkpoint-20 and latest: no temporaries left
}

TEST_CASE("re-saving a step replaces that checkpoint whole", "[ckpt][writer]") {
  test::TempDir d;
  test::commit_checkpoint(d.path(), 10);
  {
    ckpt::CheckpointWriter w(d.path(), 10, util::MapEnvironment());
    w.add_bytes("other.txt", "second save");
    w.commit("hash-2");
  }
  const auto report = ckpt::verify_checkpoint(d.path() / "checkpoint-10");
  CHECK(report.ok());
  CHECK(report.manifest->config_hash == "hash-2");
  CHECK_FALSE(fs::exists(d.path() / "checkpoint-10" / "model.safetensors"));
  CHECK(entries_in(d.path()) == 2);
}

TEST_CASE("a writer destroyed without commit leaves no trace", "[ckpt][writer]") {
  test::TempDir d;
  test::commit_checkpoint(d.path(), 5);
  fs::path staging;
  {
    ckpt::CheckpointWriter w(d.path(), 10, util::MapEnvironment());
    staging = w.staging_dir();
    w.add_bytes("a.txt", "a");
  }
  CHECK_FALSE(fs::exists(staging));
  CHECK_FALSE(fs::exists(d.path() / "checkpoint-10"));
  CHECK(test::read_text(d.path() / "latest") == "checkpoint-5\n");
}

TEST_CASE("the writer refuses bad or repeated file names", "[ckpt][writer]") {
  test::TempDir d;
  ckpt::CheckpointWriter w(d.path(), 1, util::MapEnvironment());
  w.add_bytes("a.txt", "a");
  CHECK_THROWS_AS(w.add_bytes("a.txt", "again"), std::invalid_argument);
  CHECK_THROWS_AS(w.add_bytes("manifest.json", "{}"), std::invalid_argument);
  CHECK_THROWS_AS(w.add_bytes("../escape.txt", "x"), std::invalid_argument);
  CHECK_THROWS_AS(w.add_bytes("/abs.txt", "x"), std::invalid_argument);
  CHECK_FALSE(fs::exists(d.path() / "escape.txt"));
  w.commit("h");
  CHECK_THROWS_AS(w.add_bytes("b.txt", "b"), std::logic_error);
}

TEST_CASE("a leftover staging folder of the same name is replaced", "[ckpt][writer]") {
  test::TempDir d;
  const fs::path leftover = d.path() / (".tmp-checkpoint-3-" + std::to_string(::getpid()));
  d.write(leftover.filename().string() + "/junk.bin", "junk");
  ckpt::CheckpointWriter w(d.path(), 3, util::MapEnvironment());
  CHECK(w.staging_dir() == leftover);
  CHECK_FALSE(fs::exists(leftover / "junk.bin"));
  w.add_bytes("a.txt", "a");
  const auto report = ckpt::verify_checkpoint(w.commit("h"));
  CHECK(report.ok());
  CHECK(report.notes.empty());
}
