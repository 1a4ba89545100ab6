#include "util/error.h"

#include <string_view>
#include <vector>

#include "util/strings.h"

namespace hftrain::util {

int Error::exit_code() const {
  switch (kind_) {
    case ErrorKind::kUsage:
    case ErrorKind::kConfig:
    case ErrorKind::kData:
    case ErrorKind::kCheckpoint:
      return kExitBadInput;
    case ErrorKind::kIo:
    case ErrorKind::kDistributed:
    case ErrorKind::kDiverged:
      return kExitFailure;
  }
  return kExitFailure;
}

namespace {

// A message as the user sees it: at most kMaxLines lines of at most kMaxLine bytes each, so
// that no input (a 100,000-character override, a list of every missing tensor) makes one of
// megabytes. The sites name what they list; this is the net under them.
constexpr size_t kMaxLine = 600;
constexpr size_t kMaxLines = 40;

std::string bounded(std::string_view text) {
  const std::vector<std::string> lines = split(text, '\n');
  std::string out;
  for (size_t i = 0; i < lines.size() && i < kMaxLines; ++i) out += (i ? "\n" : "") + clip(lines[i], kMaxLine);
  if (lines.size() > kMaxLines) out += "\n... and " + std::to_string(lines.size() - kMaxLines) + " more lines";
  return out;
}

}  // namespace

std::string Error::describe() const {
  std::string out = "error: ";
  out += bounded(what());
  if (!hint_.empty()) {
    out += "\nhint: ";
    out += bounded(hint_);
  }
  return out;
}

}  // namespace hftrain::util
