// keep_last rotation: by step number, never the newest, never the protected (best) checkpoint.
#include <catch2/catch.hpp>

#include "../config/helpers.h"
#include "ckpt/layout.h"
#include "ckpt/rotation.h"

using namespace hftrain;
namespace fs = std::filesystem;

namespace {

std::vector<int64_t> steps_in(const fs::path& run) {
  std::vector<int64_t> out;
  for (const auto& c : ckpt::list_checkpoints(run)) out.push_back(c.step);
  return out;
}

void make(const test::TempDir& d, std::initializer_list<int64_t> steps) {
  for (int64_t s : steps) d.write(ckpt::checkpoint_dir_name(s) + "/manifest.json", "{}");
}

}  // namespace

TEST_CASE("rotation keeps the newest keep_last by step number", "[ckpt][rotation]") {
  test::TempDir d;
  make(d, {9, 10, 100, 20, 5});
  const auto deleted = ckpt::rotate_checkpoints(d.path(), 2, std::nullopt);
  CHECK(steps_in(d.path()) == std::vector<int64_t>{20, 100});
  CHECK(deleted == std::vector<fs::path>{d.path() / "checkpoint-5", d.path() / "checkpoint-9",
                                         d.path() / "checkpoint-10"});
  for (const auto& e : fs::directory_iterator(d.path()))
    CHECK(e.path().filename().string().rfind(".tmp-", 0) != 0);
}

TEST_CASE("rotation never deletes the protected checkpoint or the newest", "[ckpt][rotation]") {
  test::TempDir d;
  make(d, {100, 200, 300, 400});
  CHECK(ckpt::rotate_checkpoints(d.path(), 1, 200).size() == 2);
  CHECK(steps_in(d.path()) == std::vector<int64_t>{200, 400});
  // The protected one may be the newest too; and a protect_step with no checkpoint protects
  // nothing.
  CHECK(ckpt::rotate_checkpoints(d.path(), 1, 400) ==
        std::vector<fs::path>{d.path() / "checkpoint-200"});
  CHECK(steps_in(d.path()) == std::vector<int64_t>{400});
  make(d, {500});
  CHECK(ckpt::rotate_checkpoints(d.path(), 1, 7).size() == 1);
  CHECK(steps_in(d.path()) == std::vector<int64_t>{500});
}

TEST_CASE("keep_last 0 keeps everything, fewer checkpoints than keep_last delete nothing",
          "[ckpt][rotation]") {
  test::TempDir d;
  make(d, {1, 2, 3});
  CHECK(ckpt::rotate_checkpoints(d.path(), 0, std::nullopt).empty());
  CHECK(ckpt::rotate_checkpoints(d.path(), 3, std::nullopt).empty());
  CHECK(ckpt::rotate_checkpoints(d.path(), 10, 1).empty());
  CHECK(steps_in(d.path()) == std::vector<int64_t>{1, 2, 3});
  CHECK(ckpt::rotate_checkpoints(d.path() / "missing", 1, std::nullopt).empty());
}

TEST_CASE("rotation leaves other files and staging folders alone", "[ckpt][rotation]") {
  test::TempDir d;
  make(d, {1, 2});
  d.write("latest", "checkpoint-2\n");
  d.write(".tmp-checkpoint-3-99/x", "a save in progress");
  d.write("final/model.json", "{}");
  ckpt::rotate_checkpoints(d.path(), 1, std::nullopt);
  CHECK(steps_in(d.path()) == std::vector<int64_t>{2});
  CHECK(fs::exists(d.path() / "latest"));
  CHECK(fs::exists(d.path() / ".tmp-checkpoint-3-99" / "x"));
  CHECK(fs::exists(d.path() / "final" / "model.json"));
}
