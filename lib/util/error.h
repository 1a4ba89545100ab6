// The few exception types hftrain throws for problems a user can act on. Each carries a message
// that names the file, line or key, and a hint that says how to fix it. apps/ maps them to exit
// codes (see exit_code()); lib/ never exits or aborts on bad input.
#pragma once

#include <stdexcept>
#include <string>

namespace hftrain::util {

enum class ErrorKind {
  kUsage,        // command-line usage
  kConfig,       // recipe, override, environment variable feeding the config
  kData,         // data files
  kCheckpoint,   // checkpoint files
  kIo,           // the filesystem refused (permissions, full disk)
  kDistributed,  // collective timeouts, lost ranks
  kDiverged,     // training stopped on non-finite or divergent steps (trainer.on_nonfinite, debug.*)
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message, std::string hint = {})
      : std::runtime_error(message), kind_(kind), hint_(std::move(hint)) {}

  ErrorKind kind() const { return kind_; }
  const std::string& hint() const { return hint_; }
  // 2 for bad input (usage, config, data, checkpoint), 1 for runtime failures.
  int exit_code() const;
  // "error: <message>" plus "hint: <hint>" when there is one.
  std::string describe() const;

 private:
  ErrorKind kind_;
  std::string hint_;
};

#define HFTRAIN_DEFINE_ERROR(Name, Kind)                                 \
  class Name : public Error {                                            \
   public:                                                               \
    explicit Name(const std::string& message, std::string hint = {})     \
        : Error(ErrorKind::Kind, message, std::move(hint)) {}            \
  };

HFTRAIN_DEFINE_ERROR(UsageError, kUsage)
HFTRAIN_DEFINE_ERROR(ConfigError, kConfig)
HFTRAIN_DEFINE_ERROR(DataError, kData)
HFTRAIN_DEFINE_ERROR(CheckpointError, kCheckpoint)
HFTRAIN_DEFINE_ERROR(IoError, kIo)
HFTRAIN_DEFINE_ERROR(DistributedError, kDistributed)
HFTRAIN_DEFINE_ERROR(DivergedError, kDiverged)
#undef HFTRAIN_DEFINE_ERROR

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

}  // namespace hftrain::util
