// One owner per run directory (ckpt/run_lock.h): the lock excludes a second holder (another open
// of the file, as another process would make) with a message naming this process, is free again
// once released, refuses a file where the directory should be; the directory's identity tells it
// moved or replaced.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "ckpt/run_lock.h"
#include "ckpt/save_policy.h"
#include "util/error.h"

using namespace hftrain;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

fs::path scratch(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / ("hftrain-lock-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(p);
  return p;
}

}  // namespace

TEST_CASE("run lock: one holder at a time, named in the refusal, free once released", "[ckpt][lock]") {
  const fs::path dir = scratch("one") / "runs" / "x";  // created with its parents
  {
    std::optional<ckpt::RunDirLock> first(ckpt::RunDirLock::acquire(dir));
    CHECK(fs::is_directory(dir));
    std::ifstream record(dir / ckpt::kRunLockFile);
    const std::string text((std::istreambuf_iterator<char>(record)), std::istreambuf_iterator<char>());
    CHECK_THAT(text, Contains("pid " + std::to_string(::getpid())));
    try {
      ckpt::RunDirLock::acquire(dir);
      FAIL("a second holder got the lock");
    } catch (const util::UsageError& e) {
      CHECK_THAT(std::string(e.what()), Contains("in use by another hftrain process"));
      CHECK_THAT(std::string(e.what()), Contains("pid " + std::to_string(::getpid())));
      CHECK(e.exit_code() == 2);
      CHECK_THAT(e.hint(), Contains("--force does not take a held lock"));
    }
    first.reset();
    CHECK_NOTHROW(ckpt::RunDirLock::acquire(dir));  // released: free again (the file stays)
  }
  CHECK(fs::exists(dir / ckpt::kRunLockFile));
  fs::remove_all(scratch("one"));
}

TEST_CASE("run lock: a file where the run directory should be is refused by name", "[ckpt][lock]") {
  const fs::path file = scratch("file");
  std::ofstream(file) << "not a folder";
  CHECK_THROWS_AS(ckpt::RunDirLock::acquire(file), util::ConfigError);
  CHECK_THROWS_WITH(ckpt::RunDirLock::acquire(file), Contains(file.string()) && Contains("not a folder"));
  fs::remove(file);
}

TEST_CASE("run directory identity: deleted, moved or replaced is no longer there", "[ckpt][lock]") {
  const fs::path dir = scratch("id");
  fs::create_directories(dir);
  const ckpt::DirIdentity id = ckpt::identify_dir(dir);
  REQUIRE(id.known);
  CHECK(ckpt::still_there(dir, id));
  fs::rename(dir, scratch("id-moved"));
  CHECK_FALSE(ckpt::still_there(dir, id));  // moved
  fs::create_directories(dir);
  CHECK_FALSE(ckpt::still_there(dir, id));  // replaced by a new one at the path
  fs::remove_all(dir);
  CHECK_FALSE(ckpt::still_there(dir, id));  // deleted
  CHECK(ckpt::still_there(dir, ckpt::DirIdentity{}));  // nothing known: nothing to compare
  fs::remove_all(scratch("id-moved"));
}

TEST_CASE("save policy: a vanished run directory always gets a checkpoint", "[ckpt][lock]") {
  config::CheckpointConfig c;
  c.at_end = false;
  c.every_steps = 0;
  c.on_signal = config::OnSignal::kExit;
  CHECK(ckpt::save_reason(c, {.step = 3, .run_dir_lost = true}) == "the run directory vanished");
  CHECK(ckpt::save_reason(c, {.step = 3}).empty());
}
