// TensorBoard scalars: an event file in the run directory that `tensorboard --logdir` reads.
// A new file per writer (as TensorFlow and PyTorch do): a resumed run adds a second file and
// TensorBoard merges the files of a folder in name order.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "metrics/append_file.h"
#include "metrics/tb_event.h"

namespace hftrain::metrics {

struct TbWriterOptions {
  // Host name in the file name; empty: gethostname().
  std::string hostname{};
  // fsync after every event; default false (see JsonlOptions::sync).
  bool sync = false;
};

class TbWriter {
 public:
  // Creates `dir`/events.out.tfevents.<unix seconds>.<hostname> (adding ".1", ".2", ... when that
  // name is taken, e.g. a resume within the same second) and writes the file_version event
  // stamped `wall_time` (seconds since the Unix epoch). `dir` must exist. Throws IoError.
  TbWriter(const std::filesystem::path& dir, double wall_time, TbWriterOptions options = {});

  // One event with all `scalars` at `step`; reaches the file before returning. Throws IoError.
  void add_scalars(int64_t step, double wall_time, const std::vector<Scalar>& scalars);
  void add_scalar(int64_t step, double wall_time, std::string tag, float value) {
    add_scalars(step, wall_time, {Scalar{std::move(tag), value}});
  }

  // Marks a (re)start at `step`: TensorBoard discards older points at or after it.
  void add_session_start(int64_t step, double wall_time);

  const std::filesystem::path& path() const { return file_.path(); }

 private:
  AppendFile file_;
};

// The file name TensorBoard recognises ("tfevents" in it) for this time and host.
std::string event_file_name(int64_t unix_seconds, const std::string& hostname);

}  // namespace hftrain::metrics
