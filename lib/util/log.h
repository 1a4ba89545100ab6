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
// The console shows only messages at `level` or above (the file still gets everything the
// overall level lets through): workers other than rank 0 keep the console to warnings.
void set_console_level(Level level);
// A tag before every message, console and file, e.g. "[rank 1] " in a multi-process job.
void set_tag(const std::string& tag);

void debug(std::string_view message);
void info(std::string_view message);
void warn(std::string_view message);
void error(std::string_view message);

}  // namespace hftrain::util::log
