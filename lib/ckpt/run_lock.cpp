#include "ckpt/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <ctime>

#include "util/error.h"
#include "util/file_writer.h"

namespace hftrain::ckpt {
namespace fs = std::filesystem;

namespace {

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "unknown host";
  return buf;
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// What the holder wrote (at most a few hundred bytes: the file is ours, but a damaged one must not
// make a long message), as "host H, pid P, since T".
std::string holder_of(int fd) {
  char buf[512] = {};
  const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  std::string text = n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  std::string out;
  for (char c : text) {
    if (c == '\n') {
      out += ", ";
    } else {
      out.push_back(c >= 32 && c < 127 ? c : '?');
    }
  }
  while (!out.empty() && (out.back() == ',' || out.back() == ' ')) out.pop_back();
  return out.empty() ? "a process that has not recorded itself yet" : out;
}

// A run directory that cannot be created or written at start is the user's setting
// (run.output_dir) on this machine, which a retry will not change: exit 2, as bad input. A full
// disk stays an IoError (exit 1): it may pass.
[[noreturn]] void refuse(const std::string& action, const fs::path& path, int err) {
  const util::IoError e = util::io_error(action, path, err);
  if (err == EACCES || err == EPERM || err == EROFS || err == ENOTDIR || err == ENOENT) {
    throw util::ConfigError(std::string("run.output_dir: ") + e.what(), e.hint());
  }
  throw e;
}

}  // namespace

RunDirLock RunDirLock::acquire(const fs::path& run_dir) {
  std::error_code ec;
  if (fs::exists(run_dir, ec) && !fs::is_directory(run_dir, ec)) {
    throw util::ConfigError("run.output_dir " + run_dir.string() + " exists and is not a folder",
                            "set run.output_dir to a folder (it is created when missing)");
  }
  fs::create_directories(run_dir, ec);
  if (ec) refuse("create the run directory", run_dir, ec.value());
  const fs::path path = run_dir / kRunLockFile;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) refuse("open the run directory's lock file", path, errno);
  int busy_tries = 0;
  while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err == EINTR) continue;
    // `hftrain runs` probes the lock with a shared lock held for an instant: a run starting in
    // that instant tries again, briefly, before it calls the directory taken.
    if (err == EWOULDBLOCK && ++busy_tries < 20) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
      continue;
    }
    if (err == EWOULDBLOCK) {
      const std::string holder = holder_of(fd);
      ::close(fd);
      throw util::UsageError("run directory " + run_dir.string() + " is in use by another hftrain process (" + holder +
                                 "); two runs writing one directory would mix their checkpoints and metrics",
                             "wait for that run to end, or give this one another run.output_dir (--force does not "
                             "take a held lock)");
    }
    ::close(fd);
    throw util::IoError("cannot lock " + path.string() + ": " + std::strerror(err),
                        "put the run directory on a filesystem that supports flock (local disk, NFSv4)");
  }
  // Ours: record who holds it, for the message another process would get.
  const std::string record =
      "host " + host_name() + "\npid " + std::to_string(::getpid()) + "\nsince " + now_utc() + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, record.data(), record.size(), 0) != static_cast<ssize_t>(record.size())) {
    // The lock holds all the same; only the holder's record is missing.
  }
  return RunDirLock(fd, run_dir);
}

RunDirLock::RunDirLock(RunDirLock&& other) noexcept : fd_(other.fd_), run_dir_(std::move(other.run_dir_)) {
  other.fd_ = -1;
}

RunDirLock::~RunDirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the flock
}

DirIdentity identify_dir(const fs::path& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return {};
  return {true, static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

bool still_there(const fs::path& dir, const DirIdentity& id) {
  if (!id.known) return true;
  const DirIdentity now = identify_dir(dir);
  return now.known && now.device == id.device && now.inode == id.inode;
}

}  // namespace hftrain::ckpt
