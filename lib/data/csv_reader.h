// CSV as RFC 4180 writes it (and TSV, the same with tabs): records end at a line break (LF or
// CRLF); a field is either unquoted (no quote character in it) or quoted, where a doubled quote
// stands for one and commas, tabs and line breaks are ordinary text. Like Python's csv module, a
// blank line is no record and a UTF-8 byte order mark at the start is skipped. Stricter than it:
// every malformed field is an error with its line, never a guess.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace hftrain::data {

struct CsvRecord {
  std::vector<std::string> fields;
  size_t line = 0;  // the line the record starts on, 1-based (a quoted line break spans lines)
};

// Parses `bytes` (the whole file, already checked to be UTF-8 text) and passes each record to
// `sink`, the header (the first record) included. Throws DataError "<file>:<line>: ..." with a hint
// for: a quote inside an unquoted field, text after a closing quote, a quoted field that never
// closes (the line it opens on), a record whose number of fields differs from the header's.
void read_csv(const std::filesystem::path& file, std::string_view bytes, char delimiter,
              const std::function<void(CsvRecord&&)>& sink);

}  // namespace hftrain::data
