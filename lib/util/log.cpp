#include "util/log.h"

#include <memory>
#include <vector>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "util/error.h"

namespace hftrain::util::log {
namespace {

std::string& tag() {
  static std::string value;
  return value;
}

std::string console_pattern() { return "%^[%H:%M:%S %l]%$ " + tag() + "%v"; }
std::string file_pattern() { return "[%Y-%m-%d %H:%M:%S.%e %l] " + tag() + "%v"; }

// The one logger; created on first use so that static initialisation order never matters.
spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    auto made = std::make_shared<spdlog::logger>("hftrain", console);
    made->set_pattern(console_pattern());
    made->set_level(spdlog::level::info);
    return made;
  }();
  return *instance;
}

spdlog::level::level_enum to_spdlog(Level level) {
  switch (level) {
    case Level::kDebug: return spdlog::level::debug;
    case Level::kInfo: return spdlog::level::info;
    case Level::kWarn: return spdlog::level::warn;
    case Level::kError: return spdlog::level::err;
    case Level::kOff: return spdlog::level::off;
  }
  return spdlog::level::info;
}

}  // namespace

Level parse_level(std::string_view name) {
  if (name == "debug") return Level::kDebug;
  if (name == "info") return Level::kInfo;
  if (name == "warn") return Level::kWarn;
  if (name == "error") return Level::kError;
  if (name == "off") return Level::kOff;
  throw ConfigError("unknown log level '" + std::string(name) + "'",
                    "use one of: debug, info, warn, error, off");
}

void set_level(Level level) { logger().set_level(to_spdlog(level)); }

void set_console_level(Level level) { logger().sinks().front()->set_level(to_spdlog(level)); }

void set_tag(const std::string& value) {
  tag() = value;
  auto& sinks = logger().sinks();
  sinks.front()->set_pattern(console_pattern());
  for (size_t i = 1; i < sinks.size(); ++i) sinks[i]->set_pattern(file_pattern());
}

void set_file(const std::string& path, bool truncate) {
  auto& sinks = logger().sinks();
  while (sinks.size() > 1) sinks.pop_back();
  if (path.empty()) return;
  try {
    auto file = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, truncate);
    file->set_pattern(file_pattern());
    sinks.push_back(std::move(file));
  } catch (const spdlog::spdlog_ex& e) {
    throw IoError("cannot open log file " + path + ": " + e.what(),
                  "check that the run directory is writable");
  }
}

void debug(std::string_view message) { logger().debug("{}", message); }
void info(std::string_view message) { logger().info("{}", message); }
void warn(std::string_view message) { logger().warn("{}", message); }
void error(std::string_view message) { logger().error("{}", message); }

}  // namespace hftrain::util::log
