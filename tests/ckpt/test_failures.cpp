// A save that fails or is killed leaves the previous checkpoint and `latest` as they were: a full
// disk (a real ENOSPC from /dev/full, and from a small tmpfs), a read-only filesystem, an output
// folder that cannot be created, and SIGKILL between files through the writer's test hook.
#include "../torch_catch.h"  // first: see the file

#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "ckpt/layout.h"
#include "ckpt/verify.h"
#include "helpers.h"
#include "util/strings.h"

using namespace hftrain;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;

namespace {

// The previous checkpoint is intact, `latest` names it, and no staging folder is left.
void check_untouched(const fs::path& run, int64_t previous) {
  const auto report = ckpt::verify_checkpoint(run / ckpt::checkpoint_dir_name(previous));
  INFO(util::join(report.problems, "\n"));
  CHECK(report.ok());
  CHECK(test::read_text(run / "latest") == ckpt::checkpoint_dir_name(previous) + "\n");
  const auto list = ckpt::list_checkpoints(run);
  REQUIRE(list.size() == 1);
  CHECK(list[0].step == previous);
  for (const auto& e : fs::directory_iterator(run)) {
    CHECK_FALSE(util::starts_with(e.path().filename().string(), ".tmp-"));
  }
}

// Runs `body` in a forked child and returns its wait status. The child never returns into Catch.
int in_child(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int rc = 100;
    try {
      rc = body();
    } catch (...) {
      rc = 101;
    }
    ::_exit(rc);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return status;
}

bool write_proc_file(const char* path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace

TEST_CASE("a full disk during a save is an IoError and the previous checkpoint survives",
          "[ckpt][writer]") {
  test::TempDir d;
  test::commit_checkpoint(d.path(), 10);
  std::string message;
  try {
    ckpt::CheckpointWriter w(d.path(), 20, util::MapEnvironment());
    w.add_json("trainer_state.json", {{"step", 20}});
    // The next file's name leads to /dev/full, where every write fails with ENOSPC.
    fs::create_symlink("/dev/full", w.staging_dir() / "model.safetensors");
    w.add_safetensors("model.safetensors", test::small_tensors(20));
    FAIL("the write to /dev/full succeeded");
  } catch (const util::IoError& e) {
    message = e.what();
    CHECK_THAT(e.hint(), Contains("free some space"));
  }
  CHECK_THAT(message, Contains("model.safetensors") && Contains("the disk is full"));
  check_untouched(d.path(), 10);
  CHECK(fs::exists("/dev/full"));  // removing the staging folder removed the link, not its target
}

TEST_CASE("an output folder that cannot be created is an IoError naming it", "[ckpt][writer]") {
  test::TempDir d;
  const auto file = d.write("plain-file", "x");
  try {
    ckpt::CheckpointWriter w(file / "run", 1, util::MapEnvironment());
    FAIL("created a folder under a file");
  } catch (const util::IoError& e) {
    CHECK_THAT(std::string(e.what()), Contains((file / "run").string()));
  }
}

TEST_CASE("a small tmpfs and a read-only remount fail cleanly (user namespace)", "[ckpt][writer]") {
  // In a child: a new user and mount namespace (so root is not needed and nothing leaks out), a
  // 256 KiB tmpfs, one checkpoint that fits, one that does not; then the tmpfs remounted
  // read-only. The child reports through its exit code and a file outside the tmpfs. The child
  // writes only bytes (no LibTorch work after fork).
  test::TempDir d;
  const fs::path mnt = d.path() / "mnt";
  const fs::path log = d.path() / "child.log";
  fs::create_directories(mnt);
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  const int status = in_child([&]() -> int {
    std::ofstream out(log);
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) return 77;
    write_proc_file("/proc/self/setgroups", "deny");
    if (!write_proc_file("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") ||
        !write_proc_file("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1")) {
      return 77;
    }
    if (::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return 77;
    if (::mount("tmpfs", mnt.c_str(), "tmpfs", 0, "size=256k") != 0) return 77;
    const fs::path run = mnt / "run";
    auto save = [&](int64_t step, size_t bytes) {
      ckpt::CheckpointWriter w(run, step, util::MapEnvironment());
      w.add_bytes("state.json", "{}");
      w.add_bytes("weights.bin", std::string(bytes, 'w'));
      w.commit("h");
    };
    auto intact = [&]() {
      return ckpt::verify_checkpoint(run / "checkpoint-1").ok() &&
             test::read_text(run / "latest") == "checkpoint-1\n" &&
             ckpt::list_checkpoints(run).size() == 1 &&
             !fs::exists(run / (".tmp-checkpoint-2-" + std::to_string(::getpid())));
    };
    save(1, 10000);
    try {
      save(2, 1 << 20);
      out << "saving 1 MiB into 256 KiB succeeded\n";
      return 1;
    } catch (const util::IoError& e) {
      out << "full: " << e.what() << "\n";
      if (!util::starts_with(e.what(), "cannot write ") ||
          std::string(e.what()).find("the disk is full") == std::string::npos) {
        return 2;
      }
    }
    if (!intact()) return 3;
    if (::mount(nullptr, mnt.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr) != 0) return 77;
    try {
      save(2, 10);
      out << "saving into a read-only filesystem succeeded\n";
      return 4;
    } catch (const util::IoError& e) {
      out << "read-only: " << e.what() << "\n";
      if (std::string(e.what()).find("read-only") == std::string::npos) return 5;
    }
    return intact() ? 0 : 6;
  });
  REQUIRE(WIFEXITED(status));
  const std::string child_log = fs::exists(log) ? test::read_text(log) : "";
  INFO(child_log);
  if (WEXITSTATUS(status) == 77) {
    WARN("user namespaces or tmpfs mounts are not available here; skipped");
    return;
  }
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_THAT(child_log, Contains("full: cannot write") && Contains("read-only: cannot create"));
}

TEST_CASE("SIGKILL between files of a save leaves the previous checkpoint usable",
          "[ckpt][writer]") {
  // The writer below closes 3 files and then the manifest (the 4th): n = 0 kills right after the
  // staging folder exists, n = 4 after the manifest, before the rename.
  const int n = GENERATE(0, 1, 2, 3, 4);
  INFO("crash after file " << n);
  test::TempDir d;
  test::commit_checkpoint(d.path(), 5);
  const int status = in_child([&]() -> int {
    ::setenv(ckpt::kCrashHookEnv, ("7:" + std::to_string(n)).c_str(), 1);
    ckpt::CheckpointWriter w(d.path(), 7);  // the process environment: the hook as a user sets it
    w.add_bytes("a.txt", "a");
    w.add_json("b.json", {{"b", 1}});
    w.add_bytes("sub/c.txt", "c");
    w.commit("h");
    return 3;  // not killed
  });
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  CHECK_FALSE(fs::exists(d.path() / "checkpoint-7"));
  size_t staged_files = 0;
  bool has_manifest = false;
  fs::path staging;
  for (const auto& e : fs::directory_iterator(d.path())) {
    if (util::starts_with(e.path().filename().string(), ".tmp-checkpoint-7-")) staging = e.path();
  }
  REQUIRE_FALSE(staging.empty());
  for (const auto& e : fs::recursive_directory_iterator(staging)) {
    if (e.is_regular_file()) {
      ++staged_files;
      has_manifest = has_manifest || e.path().filename() == "manifest.json";
    }
  }
  CHECK(staged_files == static_cast<size_t>(n));
  CHECK(has_manifest == (n == 4));
  const auto choice = ckpt::newest_verified(d.path());
  REQUIRE(choice);
  CHECK(choice->chosen.step == 5);
  CHECK(choice->skipped.empty());
  CHECK(ckpt::remove_stale_staging(d.path()) == std::vector<fs::path>{staging});
  check_untouched(d.path(), 5);
}

TEST_CASE("the crash hook ignores other steps and malformed values", "[ckpt][writer]") {
  test::TempDir d;
  for (const char* value : {"8:0", "7", "7:", ":1", "7:x", "x:1", "-7:0", "7:-1", ""}) {
    INFO(value);
    util::MapEnvironment env{{ckpt::kCrashHookEnv, value}};
    ckpt::CheckpointWriter w(d.path(), 7, env);
    w.add_bytes("a.txt", "a");
    CHECK(w.commit("h") == d.path() / "checkpoint-7");
  }
}
