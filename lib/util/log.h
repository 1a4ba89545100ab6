// The logging facade. Only log.cpp includes spdlog: the torch wheel ships its own fmt headers
// (fmt 12) while Debian's spdlog is built against fmt 9, and a translation unit that saw both
// would mix them. Callers format their message first and pass a finished string.
#pragma once

#include <string>
#include <string_view>

namespace hftrain::util::log {

enum class Level { kDebug, kInfo, kWarn, kError, kOff };

// Parses "debug", "info", "warn", "error", "off"; throws ConfigError otherwise.
Level parse_level(std::string_view name);
void set_level(Level level);
// Also write every line to this file; empty path stops file logging. A resumed run appends
// (`truncate` false) so that the log of the run so far is kept.
void set_file(const std::string& path, bool truncate = false);

void debug(std::string_view message);
void info(std::string_view message);
void warn(std::string_view message);
void error(std::string_view message);

}  // namespace hftrain::util::log
