#include "metrics/memory.h"

#include <sys/resource.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace hftrain::metrics {
namespace {

std::optional<double> proc_status_mib(std::string_view key) {
  std::ifstream in("/proc/self/status");
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  const auto kb = parse_proc_status_kb(text.str(), key);
  if (!kb) return std::nullopt;
  return *kb / 1024.0;
}

}  // namespace

std::optional<double> parse_proc_status_kb(std::string_view text, std::string_view key) {
  size_t line_start = 0;
  while (line_start < text.size()) {
    size_t line_end = text.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = text.size();
    const std::string_view line = text.substr(line_start, line_end - line_start);
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ':') {
      const std::string rest(line.substr(key.size() + 1));
      char* end = nullptr;
      const double value = std::strtod(rest.c_str(), &end);
      if (end == rest.c_str()) return std::nullopt;
      return value;
    }
    line_start = line_end + 1;
  }
  return std::nullopt;
}

std::optional<double> host_peak_rss_mib() {
  if (auto mib = proc_status_mib("VmHWM")) return mib;
  struct rusage usage {};
  if (::getrusage(RUSAGE_SELF, &usage) != 0 || usage.ru_maxrss <= 0) return std::nullopt;
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // kilobytes on Linux
}

std::optional<double> host_current_rss_mib() {
  return proc_status_mib("VmRSS");
}

}  // namespace hftrain::metrics
