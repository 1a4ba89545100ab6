#include "metrics/jsonl_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/json_depth.h"

namespace hftrain::metrics {
namespace {

[[noreturn]] void fail(const std::string& action, const std::filesystem::path& path, int err) {
  throw util::IoError("cannot " + action + " " + path.string() + ": " + std::strerror(err),
                      "check that the run directory is writable");
}

// Closes the descriptor on every path out of truncate_torn_last_line.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

size_t truncate_torn_last_line(const std::filesystem::path& path) {
  Fd f{::open(path.c_str(), O_RDWR | O_CLOEXEC)};
  if (f.fd < 0) {
    if (errno == ENOENT) return 0;
    fail("open", path, errno);
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) fail("stat", path, errno);
  const off_t size = st.st_size;
  if (size == 0) return 0;

  // Scan backwards in blocks for the last newline; normally the very last byte is one.
  constexpr off_t kBlock = 64 * 1024;
  std::vector<char> buf;
  off_t end = size;
  off_t keep = 0;  // bytes to keep: just past the last newline, 0 when there is none
  bool first_block = true;
  while (end > 0) {
    const off_t begin = std::max<off_t>(0, end - kBlock);
    buf.resize(static_cast<size_t>(end - begin));
    const ssize_t n = ::pread(f.fd, buf.data(), buf.size(), begin);
    if (n != static_cast<ssize_t>(buf.size())) fail("read", path, n < 0 ? errno : EIO);
    if (first_block && buf.back() == '\n') return 0;
    first_block = false;
    const auto it = std::find(buf.rbegin(), buf.rend(), '\n');
    if (it != buf.rend()) {
      keep = begin + static_cast<off_t>(buf.rend() - it);
      break;
    }
    end = begin;
  }
  if (::ftruncate(f.fd, keep) != 0) fail("truncate", path, errno);
  return static_cast<size_t>(size - keep);
}

JsonlWriter::JsonlWriter(std::filesystem::path path, JsonlOptions options)
    : repaired_bytes_(truncate_torn_last_line(path)),
      file_(std::move(path), AppendFile::Mode::kAppend, options.sync) {
  if (repaired_bytes_ > 0) {
    util::log::warn(file_.path().string() + ": removed a " + std::to_string(repaired_bytes_) +
                    "-byte incomplete last line (an earlier run stopped while writing it)");
  }
}

void JsonlWriter::append(std::string_view json_object) {
  if (json_object.find('\n') != std::string_view::npos) {
    throw std::invalid_argument("a JSONL record must be one line");
  }
  std::string line;
  line.reserve(json_object.size() + 1);
  line.append(json_object);
  line.push_back('\n');
  file_.append(line);
}

size_t drop_records_after(const std::filesystem::path& path, int64_t step) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return 0;
  const std::string text = util::read_file<util::IoError>(path, "metrics file", size_t{4} << 30);
  std::string kept;
  kept.reserve(text.size());
  size_t dropped = 0;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    end = end == std::string::npos ? text.size() : end + 1;
    const std::string_view line(text.data() + begin, end - begin);
    // A damaged line (or one nested absurdly deep) is dropped like any other that is not a record.
    const auto record = util::json_too_deep(line) ? nlohmann::json(nlohmann::json::value_t::discarded)
                                                  : nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (record.is_object() && record.contains("step") && record["step"].is_number_integer() &&
        record["step"].get<int64_t>() > step) {
      ++dropped;
    } else {
      kept.append(line);
    }
    begin = end;
  }
  if (dropped > 0) util::atomic_write_file(path, kept);
  return dropped;
}

}  // namespace hftrain::metrics
