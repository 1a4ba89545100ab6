#include "data/text_checks.h"

#include <cstdint>
#include <string>

#include "util/error.h"

namespace hftrain::data {
namespace {

enum class Problem { kNone, kNul, kUtf8 };

// Returns the problem and, through `offset`, the byte where it is.
Problem scan(std::string_view s, size_t& offset) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    unsigned char c = p[i];
    if (c < 0x80) {
      if (c == 0) {
        offset = i;
        return Problem::kNul;
      }
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    }
    bool ok = len != 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (ok && (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) ok = false;
    if (!ok) {
      offset = i;
      return Problem::kUtf8;
    }
    i += len;
  }
  return Problem::kNone;
}

size_t line_of(std::string_view s, size_t offset) {
  size_t line = 1;
  for (size_t i = 0; i < offset && i < s.size(); ++i) line += s[i] == '\n';
  return line;
}

}  // namespace

void check_text_file(const std::filesystem::path& file, std::string_view bytes) {
  const std::string name = file.string();
  if (bytes.empty()) {
    throw util::DataError("data file " + name + ":1: is empty", "remove it, or exclude it from the source");
  }
  size_t offset = 0;
  switch (scan(bytes, offset)) {
    case Problem::kNone:
      return;
    case Problem::kNul:
      throw util::DataError("data file " + name + ":" + std::to_string(line_of(bytes, offset)) +
                                ": binary data (NUL byte at offset " + std::to_string(offset) + "), not text",
                            "exclude binary files from the source (e.g. exclude: [\"*.dat\"]), or use "
                            "format tokens for pre-tokenized shards");
    case Problem::kUtf8:
      throw util::DataError("data file " + name + ":" + std::to_string(line_of(bytes, offset)) +
                                ": invalid UTF-8 (byte offset " + std::to_string(offset) + ")",
                            "convert the file to UTF-8 (iconv -f <encoding> -t UTF-8), or exclude it");
  }
}

void check_text_field(const std::filesystem::path& file, size_t line, std::string_view text) {
  size_t offset = 0;
  Problem problem = scan(text, offset);
  if (problem == Problem::kNone) return;
  throw util::DataError("data file " + file.string() + ":" + std::to_string(line) +
                            (problem == Problem::kNul ? ": a text field holds a NUL character"
                                                      : ": a text field holds invalid UTF-8"),
                        "fix or drop that line");
}

}  // namespace hftrain::data
