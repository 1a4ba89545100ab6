// Checkpoint folder names, listing by step number, and cleaning up after crashed saves.
#include <catch2/catch.hpp>

#include "../config/helpers.h"
#include "ckpt/layout.h"

using namespace hftrain;
namespace fs = std::filesystem;

TEST_CASE("checkpoint folder names parse strictly", "[ckpt][layout]") {
  CHECK(ckpt::checkpoint_dir_name(0) == "checkpoint-0");
  CHECK(ckpt::checkpoint_dir_name(1234) == "checkpoint-1234");
  CHECK(ckpt::parse_checkpoint_step("checkpoint-0") == 0);
  CHECK(ckpt::parse_checkpoint_step("checkpoint-100") == 100);
  CHECK(ckpt::parse_checkpoint_step("checkpoint-999999999999999999") == 999999999999999999);
  for (const char* bad :
       {"checkpoint-", "checkpoint-01", "checkpoint--1", "checkpoint-+1", "checkpoint-1a",
        "checkpoint-1 ", "checkpoint-1.5", "Checkpoint-1", "xcheckpoint-1", "checkpoint_1",
        ".tmp-checkpoint-1-99", "checkpoint-1000000000000000000", "checkpoint-1/"}) {
    INFO(bad);
    CHECK_FALSE(ckpt::parse_checkpoint_step(bad));
  }
}

TEST_CASE("list_checkpoints orders by step number and ignores everything else", "[ckpt][layout]") {
  test::TempDir d;
  CHECK(ckpt::list_checkpoints(d.path() / "missing").empty());
  CHECK_FALSE(ckpt::has_checkpoints(d.path()));
  for (const char* name :
       {"checkpoint-100", "checkpoint-9", "checkpoint-10", "checkpoint-09", ".tmp-checkpoint-11-5",
        ".tmp-deleting-checkpoint-3-5", "final", "checkpoint-x"}) {
    fs::create_directories(d.path() / name);
  }
  d.write("checkpoint-50", "a file, not a folder");
  d.write("latest", "checkpoint-100\n");
  const auto list = ckpt::list_checkpoints(d.path());
  REQUIRE(list.size() == 3);
  CHECK(list[0].step == 9);
  CHECK(list[1].step == 10);
  CHECK(list[2].step == 100);
  CHECK(list[2].dir == d.path() / "checkpoint-100");
  CHECK(ckpt::has_checkpoints(d.path()));
}

TEST_CASE("remove_stale_staging removes what crashed saves and rotations left, nothing else",
          "[ckpt][layout]") {
  test::TempDir d;
  d.write(".tmp-checkpoint-20-1234/model.safetensors", "partial");
  d.write(".tmp-deleting-checkpoint-5-1234/x", "half deleted");
  d.write("checkpoint-10/manifest.json", "{}");
  d.write(".tmp-checkpoint-file", "a file with the prefix is not ours");
  d.write("latest.tmp-77", "the temporary of an interrupted update of `latest`");
  const auto removed = ckpt::remove_stale_staging(d.path());
  REQUIRE(removed.size() == 3);
  CHECK(removed[0] == d.path() / ".tmp-checkpoint-20-1234");
  CHECK(removed[1] == d.path() / ".tmp-deleting-checkpoint-5-1234");
  CHECK(removed[2] == d.path() / "latest.tmp-77");
  CHECK_FALSE(fs::exists(removed[0]));
  CHECK_FALSE(fs::exists(removed[1]));
  CHECK(fs::exists(d.path() / "checkpoint-10" / "manifest.json"));
  CHECK(fs::exists(d.path() / ".tmp-checkpoint-file"));
  CHECK(ckpt::remove_stale_staging(d.path()).empty());
  CHECK(ckpt::remove_stale_staging(d.path() / "missing").empty());
}
