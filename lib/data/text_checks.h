// Checks that a data file is text before it is cut into documents, so that binary files (fortune
// .dat indexes, a stray model checkpoint) fail with a message naming the file and line instead of
// feeding garbage to the tokenizer.
#pragma once

#include <filesystem>
#include <string_view>

namespace hftrain::data {

// Throws DataError "<file>:<line>: ..." for an empty file, a NUL byte (binary data) or invalid
// UTF-8 (including overlong forms and surrogates).
void check_text_file(const std::filesystem::path& file, std::string_view bytes);

// Throws DataError "<file>:<line>: ..." when `text` (a JSON string from that line) is not
// valid UTF-8 or holds a NUL.
void check_text_field(const std::filesystem::path& file, size_t line, std::string_view text);

}  // namespace hftrain::data
