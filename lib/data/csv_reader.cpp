#include "data/csv_reader.h"

#include "util/error.h"

namespace hftrain::data {
namespace {

constexpr std::string_view kBom = "\xEF\xBB\xBF";

class CsvParser {
 public:
  CsvParser(const std::filesystem::path& file, std::string_view bytes, char delimiter)
      : file_(file), bytes_(bytes), delimiter_(delimiter) {
    if (bytes_.starts_with(kBom)) pos_ = kBom.size();
  }

  // The next record; false at the end of the input.
  bool next(CsvRecord& record) {
    while (pos_ < bytes_.size() && at_line_break())
      skip_line_break();  // blank lines are no records
    if (pos_ >= bytes_.size()) return false;
    record.fields.clear();
    record.line = line_;
    while (true) {
      record.fields.push_back(field(record.fields.size() + 1));
      if (pos_ >= bytes_.size()) return true;
      if (at_line_break()) {
        skip_line_break();
        return true;
      }
      ++pos_;  // the delimiter
    }
  }

  [[noreturn]] void fail(size_t line, const std::string& what, const std::string& hint) const {
    throw util::DataError("data file " + file_.string() + ":" + std::to_string(line) + ": " + what,
                          hint);
  }

 private:
  bool at_line_break() const {
    return bytes_[pos_] == '\n' ||
           (bytes_[pos_] == '\r' && pos_ + 1 < bytes_.size() && bytes_[pos_ + 1] == '\n');
  }
  void skip_line_break() {
    pos_ += bytes_[pos_] == '\r' ? 2 : 1;
    ++line_;
  }
  bool at_field_end() const {
    return pos_ >= bytes_.size() || bytes_[pos_] == delimiter_ || at_line_break();
  }

  std::string field(size_t column) {
    std::string out;
    if (pos_ < bytes_.size() && bytes_[pos_] == '"') return quoted(column);
    while (!at_field_end()) {
      if (bytes_[pos_] == '"') {
        fail(line_, "column " + std::to_string(column) + " has a quote inside an unquoted field",
             "quote the whole field and double each quote inside it: \"she said \"\"hi\"\"\"");
      }
      out += bytes_[pos_++];
    }
    return out;
  }

  std::string quoted(size_t column) {
    const size_t opened = line_;
    std::string out;
    ++pos_;
    while (true) {
      if (pos_ >= bytes_.size()) {
        fail(
            opened,
            "the quoted field in column " + std::to_string(column) + " opens here and never closes",
            "close it with a quote; a quote inside a quoted field is written twice (\"\")");
      }
      const char c = bytes_[pos_++];
      if (c == '\n') ++line_;
      if (c != '"') {
        out += c;
      } else if (pos_ < bytes_.size() && bytes_[pos_] == '"') {
        out += '"';
        ++pos_;
      } else if (at_field_end()) {
        return out;
      } else {
        fail(line_, "column " + std::to_string(column) + " has text after its closing quote",
             "a quote inside a quoted field is written twice (\"\"); or remove what follows the "
             "quote");
      }
    }
  }

  const std::filesystem::path& file_;
  std::string_view bytes_;
  char delimiter_;
  size_t pos_ = 0;
  size_t line_ = 1;
};

}  // namespace

void read_csv(const std::filesystem::path& file, std::string_view bytes, char delimiter,
              const std::function<void(CsvRecord&&)>& sink) {
  CsvParser parser(file, bytes, delimiter);
  CsvRecord record;
  size_t columns = 0;
  while (parser.next(record)) {
    if (columns == 0) {
      columns = record.fields.size();
    } else if (record.fields.size() != columns) {
      parser.fail(record.line,
                  "the record has " + std::to_string(record.fields.size()) +
                      " fields, the header has " + std::to_string(columns),
                  "a field holding the delimiter or a line break must be quoted (\"a, b\"); every "
                  "record has "
                  "one field per header column");
    }
    sink(std::move(record));
    record = CsvRecord{};
  }
}

}  // namespace hftrain::data
