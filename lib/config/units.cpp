#include "config/units.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

namespace hftrain::config {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Splits "1.5GiB" into 1.5 and "GiB". Returns false when there is no leading number.
bool split_number(std::string_view text, double& number, std::string_view& unit) {
  size_t end = 0;
  while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) ||
                               text[end] == '.')) {
    ++end;
  }
  if (end == 0) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + end, number);
  if (ec != std::errc() || ptr != text.data() + end) return false;
  unit = text.substr(end);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  return true;
}

Parsed<int64_t> to_whole(double value, double scale, std::string_view text, const char* what) {
  const double total = value * scale;
  if (!std::isfinite(total) || total >= 9.2e18) {
    return std::string("`") + std::string(text) + "` is too large for a " + what;
  }
  const double rounded = std::round(total);
  if (std::fabs(total - rounded) > 1e-6 * std::max(1.0, std::fabs(total))) {
    return std::string("`") + std::string(text) + "` is not a whole number of " + what + "s";
  }
  return static_cast<int64_t>(rounded);
}

}  // namespace

Parsed<int64_t> parse_size(std::string_view text) {
  static const std::array<std::pair<const char*, double>, 9> kUnits{{
      {"b", 1.0}, {"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
      {"kib", 1024.0}, {"mib", 1024.0 * 1024}, {"gib", 1024.0 * 1024 * 1024},
      {"tib", 1024.0 * 1024 * 1024 * 1024}}};
  double number = 0;
  std::string_view unit;
  if (!split_number(text, number, unit)) {
    return "`" + std::string(text) + "` is not a size; write e.g. 25MiB, 1GB or 4096";
  }
  if (unit.empty()) return to_whole(number, 1.0, text, "byte");
  const std::string u = lower(unit);
  for (const auto& [name, scale] : kUnits) {
    if (u == name) return to_whole(number, scale, text, "byte");
  }
  return "`" + std::string(text) + "` has an unknown size unit `" + std::string(unit) +
         "`; use B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024)";
}

Parsed<int64_t> parse_count(std::string_view text) {
  double number = 0;
  std::string_view unit;
  if (!split_number(text, number, unit)) {
    return "`" + std::string(text) + "` is not a count; write e.g. 1000, 10M or 2B";
  }
  double scale = 0;
  if (unit.empty()) scale = 1;
  else if (unit == "K" || unit == "k") scale = 1e3;
  else if (unit == "M") scale = 1e6;
  else if (unit == "B" || unit == "G") scale = 1e9;
  else if (unit == "T") scale = 1e12;
  if (scale == 0) {
    return "`" + std::string(text) + "` has an unknown count suffix `" + std::string(unit) +
           "`; use K, M, B (or G) or T";
  }
  return to_whole(number, scale, text, "count");
}

Parsed<double> parse_duration(std::string_view text) {
  static const std::array<std::pair<const char*, double>, 5> kUnits{
      {{"ms", 1e-3}, {"s", 1.0}, {"m", 60.0}, {"h", 3600.0}, {"d", 86400.0}}};
  const std::string bad = "`" + std::string(text) + "` is not a duration; write e.g. 30s, 10m, 1h30m";
  std::string_view rest = text;
  double total = 0;
  double last_scale = std::numeric_limits<double>::infinity();
  bool any = false;
  while (!rest.empty()) {
    double number = 0;
    std::string_view unit;
    if (!split_number(rest, number, unit)) return bad;
    size_t ulen = 0;
    while (ulen < unit.size() && std::isalpha(static_cast<unsigned char>(unit[ulen]))) ++ulen;
    std::string u = lower(unit.substr(0, ulen));
    double scale = 0;
    if (u.empty()) {
      if (any || ulen != unit.size()) return bad;
      scale = 1.0;  // a plain number is seconds
    }
    for (const auto& [name, s] : kUnits) {
      if (u == name) scale = s;
    }
    if (scale == 0 || scale >= last_scale) return bad;
    last_scale = scale;
    total += number * scale;
    any = true;
    rest = unit.substr(ulen);
  }
  if (!any || !std::isfinite(total)) return bad;
  return total;
}

std::string format_size(int64_t bytes) {
  static const std::array<std::pair<const char*, int64_t>, 4> kUnits{
      {{"TiB", int64_t{1} << 40}, {"GiB", int64_t{1} << 30}, {"MiB", int64_t{1} << 20}, {"KiB", 1024}}};
  for (const auto& [name, scale] : kUnits) {
    if (bytes != 0 && bytes % scale == 0) return std::to_string(bytes / scale) + name;
  }
  return std::to_string(bytes);
}

std::string format_count(int64_t count) {
  static const std::array<std::pair<const char*, int64_t>, 4> kUnits{
      {{"T", 1000000000000}, {"B", 1000000000}, {"M", 1000000}, {"K", 1000}}};
  for (const auto& [name, scale] : kUnits) {
    if (count != 0 && count % scale == 0) return std::to_string(count / scale) + name;
  }
  return std::to_string(count);
}

std::string format_duration(double seconds) {
  static const std::array<std::pair<const char*, double>, 3> kUnits{
      {{"d", 86400.0}, {"h", 3600.0}, {"m", 60.0}}};
  for (const auto& [name, scale] : kUnits) {
    double n = seconds / scale;
    if (seconds != 0 && n == std::floor(n) && n < 1e15) {
      return std::to_string(static_cast<int64_t>(n)) + name;
    }
  }
  // Fixed notation: parse_duration reads digits and a point, not exponents.
  char buf[512];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, seconds, std::chars_format::fixed);
  return std::string(buf, ptr) + "s";
}

}  // namespace hftrain::config
