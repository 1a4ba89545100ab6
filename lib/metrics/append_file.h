// An append-only file written with one write(2) per record, for the metrics files. Each record
// reaches the kernel before append() returns, so a crash of the process loses nothing already
// appended; a crash of the machine can lose what the page cache held unless `sync` is set.
#pragma once

#include <filesystem>
#include <string_view>

namespace hftrain::metrics {

class AppendFile {
 public:
  enum class Mode {
    kAppend,     // create if missing, else keep the contents and write after them
    kExclusive,  // create; throws IoError when the file already exists
  };

  // Throws IoError naming the path when the file cannot be opened (missing or read-only folder,
  // path under a plain file).
  AppendFile(std::filesystem::path path, Mode mode, bool sync = false);
  ~AppendFile();
  AppendFile(AppendFile&& other) noexcept;
  AppendFile& operator=(AppendFile&& other) noexcept;
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  // Writes all of `bytes` at the end of the file (retrying short writes), then fsyncs when `sync`
  // was asked for. Throws IoError naming the path on failure (e.g. a full disk).
  void append(std::string_view bytes);
  // Closes now, reporting a failed close as IoError; the destructor closes silently.
  void close();

  const std::filesystem::path& path() const { return path_; }
  bool is_open() const { return fd_ >= 0; }
  // Whether the path already existed with content when it was opened.
  bool had_content() const { return had_content_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  bool sync_ = false;
  bool had_content_ = false;
};

}  // namespace hftrain::metrics
