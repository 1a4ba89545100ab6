// metrics.jsonl: one JSON object per line, append-only. Each record is one write(2), so a crash
// loses at most the line being written; reopening (a resumed run) appends after what is there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>

#include "metrics/append_file.h"

namespace hftrain::metrics {

struct JsonlOptions {
  // fsync after every record, so that even a power loss keeps each finished line. Default false:
  // a logging step every few seconds does not need it, and fsync can stall on network filesystems.
  bool sync = false;
};

class JsonlWriter {
 public:
  // Opens `path` for appending, creating it when missing. A last line without its newline (the
  // line a crash cut short) is cut off first, with a warning, so that every line stays valid
  // JSON. Throws IoError when the file cannot be opened or repaired.
  explicit JsonlWriter(std::filesystem::path path, JsonlOptions options = {});

  // Appends `json_object` (one serialized JSON value, no newline) and a newline. Throws IoError
  // when the write fails; std::invalid_argument when the text holds a newline.
  void append(std::string_view json_object);

  const std::filesystem::path& path() const { return file_.path(); }
  // Bytes of a torn last line cut off when the file was opened; 0 normally.
  size_t repaired_bytes() const { return repaired_bytes_; }

 private:
  size_t repaired_bytes_ = 0;  // initialised before file_, which opens after the repair
  AppendFile file_;
};

// Cuts `path` back to just after its last newline when it does not end with one; returns the
// number of bytes removed. A missing or empty file is left alone. Throws IoError on failure.
size_t truncate_torn_last_line(const std::filesystem::path& path);

// Rewrites `path` (crash-safely) without the records whose "step" is greater than `step`, so
// that a run restarted from step `step` continues a consistent history. Lines that are not JSON
// objects with a numeric "step" are kept. Returns the number of records dropped; a missing file
// is left alone. Throws IoError.
size_t drop_records_after(const std::filesystem::path& path, int64_t step);

}  // namespace hftrain::metrics
