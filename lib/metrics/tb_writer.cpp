#include "metrics/tb_writer.h"

#include <unistd.h>

#include <array>
#include <cmath>

#include "util/error.h"

namespace hftrain::metrics {
namespace {

std::string local_hostname() {
  std::array<char, 256> buf{};
  if (::gethostname(buf.data(), buf.size() - 1) != 0 || buf[0] == '\0') return "localhost";
  return std::string(buf.data());
}

// A host name is free text as far as we know; keep the file name one plain path component.
std::string sanitize(std::string name) {
  for (char& c : name) {
    if (c == '/' || c == '\0') c = '_';
  }
  return name;
}

AppendFile create_unique(const std::filesystem::path& dir, const std::string& base, bool sync) {
  constexpr int kMaxTries = 100;
  for (int i = 0;; ++i) {
    const std::string name = i == 0 ? base : base + "." + std::to_string(i);
    try {
      return AppendFile(dir / name, AppendFile::Mode::kExclusive, sync);
    } catch (const util::IoError&) {
      // Retry only when the name is taken; anything else (no folder, no permission) is final.
      std::error_code ec;
      if (i + 1 >= kMaxTries || !std::filesystem::exists(dir / name, ec)) throw;
    }
  }
}

}  // namespace

std::string event_file_name(int64_t unix_seconds, const std::string& hostname) {
  return "events.out.tfevents." + std::to_string(unix_seconds) + "." + sanitize(hostname);
}

TbWriter::TbWriter(const std::filesystem::path& dir, double wall_time, TbWriterOptions options)
    : file_(create_unique(
          dir,
          event_file_name(static_cast<int64_t>(std::floor(wall_time)),
                          options.hostname.empty() ? local_hostname() : options.hostname),
          options.sync)) {
  file_.append(frame_tfrecord(encode_file_version_event(wall_time)));
}

void TbWriter::add_session_start(int64_t step, double wall_time) {
  file_.append(frame_tfrecord(encode_session_start_event(wall_time, step)));
}

void TbWriter::add_scalars(int64_t step, double wall_time, const std::vector<Scalar>& scalars) {
  if (scalars.empty()) return;
  file_.append(frame_tfrecord(encode_scalars_event(wall_time, step, scalars)));
}

}  // namespace hftrain::metrics
