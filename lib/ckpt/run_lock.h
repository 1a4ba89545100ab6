// One owner per run directory: `run` and `resume` hold an exclusive advisory lock (flock) on
// <run_dir>/.hftrain.lock for the life of the process that decides about the directory (the
// single process, hftrain's launcher on node 0, or rank 0 under mpirun). The kernel drops the
// lock when that process dies, so a crash never leaves a stale one; the file stays and records the
// last holder (host, pid, start time) for the message a second process gets.
//
// flock is advisory: it keeps hftrain processes apart, not other programs. On NFS it needs a
// server and client with lock support (NFSv4; with NFSv3 the lock manager); where the filesystem
// refuses locks, acquire() says so (IoError) rather than run unguarded.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace hftrain::ckpt {

inline constexpr const char* kRunLockFile = ".hftrain.lock";

class RunDirLock {
 public:
  // Creates `run_dir` if needed and takes its lock without waiting. Throws UsageError (exit 2)
  // naming the holder's host and pid when another process holds it, ConfigError when run_dir is
  // a file, IoError (util::io_error's words: read-only, permission denied, disk full) when the
  // directory or the lock file cannot be made or the filesystem refuses the lock.
  static RunDirLock acquire(const std::filesystem::path& run_dir);

  RunDirLock(RunDirLock&& other) noexcept;
  RunDirLock& operator=(RunDirLock&&) = delete;
  RunDirLock(const RunDirLock&) = delete;
  ~RunDirLock();  // releases the lock (the file stays)

  const std::filesystem::path& run_dir() const { return run_dir_; }

 private:
  RunDirLock(int fd, std::filesystem::path run_dir) : fd_(fd), run_dir_(std::move(run_dir)) {}
  int fd_ = -1;
  std::filesystem::path run_dir_;
};

// The run directory as a process found it (device and inode), to notice it deleted, moved or
// replaced while training: the trainer checks after every step, stops, and saves a checkpoint
// into a recreated directory (README: "A run directory that vanishes").
struct DirIdentity {
  bool known = false;
  uint64_t device = 0;
  uint64_t inode = 0;
};
DirIdentity identify_dir(const std::filesystem::path& dir);  // known=false when it cannot be read
// Whether `dir` still names the directory `id` describes (true when `id` is not known).
bool still_there(const std::filesystem::path& dir, const DirIdentity& id);

}  // namespace hftrain::ckpt
