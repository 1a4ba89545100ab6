// Quantities written the way people think of them: sizes ("25MiB"), counts ("10M", "2B") and
// durations ("30s", "10m", "1h30m"). Each parser returns an error text instead of throwing so
// that validation can collect every problem at once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace hftrain::config {

template <class T>
using Parsed = std::variant<T, std::string>;  // the value, or what is wrong with the text

// Bytes. Units B, KB/MB/GB/TB (powers of 1000), KiB/MiB/GiB/TiB (powers of 1024), case-insensitive;
// a plain integer is bytes. "1.5GiB" is fine when it comes to a whole number of bytes.
Parsed<int64_t> parse_size(std::string_view text);
// A count: plain integer, or a suffix K (1e3), M (1e6), B or G (1e9), T (1e12): "10M", "2B", "1.5K".
Parsed<int64_t> parse_count(std::string_view text);
// Seconds. Units ms, s, m, h, d, combinable largest first ("1h30m"); a plain number is seconds.
Parsed<double> parse_duration(std::string_view text);

// The shortest exact spelling: format_size(26214400) == "25MiB", format_count(2e9) == "2B",
// format_duration(90) == "90s", format_duration(600) == "10m". Each re-parses to the same value.
std::string format_size(int64_t bytes);
std::string format_count(int64_t count);
std::string format_duration(double seconds);

}  // namespace hftrain::config
