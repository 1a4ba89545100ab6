// Small string helpers shared by the stages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hftrain::util {

std::vector<std::string> split(std::string_view text, char sep);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
std::string trim(std::string_view text);
bool starts_with(std::string_view text, std::string_view prefix);
// `text` read whole as a decimal integer (an optional '-' and digits, nothing before or after);
// nullopt when it is not one or does not fit in 64 bits. For numbers from the environment.
std::optional<int64_t> parse_int64(std::string_view text);

// `text` as it goes into a message: whole when at most `max` bytes, else its first `max` bytes
// (not cutting a UTF-8 character) and "... (N bytes in all)".
std::string clip(std::string_view text, size_t max = 200);

// Damerau-free Levenshtein distance; used for "did you mean" suggestions.
size_t edit_distance(std::string_view a, std::string_view b);
// The candidates closest to `word`, best first, within a distance that scales with its length.
std::vector<std::string> closest_matches(std::string_view word,
                                         const std::vector<std::string>& candidates,
                                         size_t max_results = 3);

// Returns an empty string when `bytes` is valid UTF-8 with no NUL, else a description of the
// first problem with its 1-based line number.
std::string check_utf8_text(std::string_view bytes);

}  // namespace hftrain::util
