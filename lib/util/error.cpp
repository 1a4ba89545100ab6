#include "util/error.h"

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
      return kExitFailure;
  }
  return kExitFailure;
}

std::string Error::describe() const {
  std::string out = "error: ";
  out += what();
  if (!hint_.empty()) {
    out += "\nhint: ";
    out += hint_;
  }
  return out;
}

}  // namespace hftrain::util
