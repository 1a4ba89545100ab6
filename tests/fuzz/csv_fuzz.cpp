// Fuzz target for the CSV/TSV reader of labelled data, as the loader calls it: the input is a
// whole file, checked to be UTF-8 text first, then read with ',' and with '\t'. Any
// util::DataError is a correct answer to bad input; every other exception, crash, hang or
// sanitizer report is a bug. Accepted records must keep the reader's promises: every record has
// the header's number of fields, and line numbers never go back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

#include "data/csv_reader.h"
#include "util/error.h"
#include "util/strings.h"

namespace {

[[noreturn]] void broken(const std::string& what) {
  std::cerr << "CSV reader broke a promise: " << what << "\n";
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (!hftrain::util::check_utf8_text(bytes).empty()) return 0;  // the loader refuses it before
  for (const char delimiter : {',', '\t'}) {
    size_t fields = 0, last_line = 0;
    bool first = true;
    try {
      hftrain::data::read_csv("fuzz.csv", bytes, delimiter, [&](hftrain::data::CsvRecord&& r) {
        if (first) {
          fields = r.fields.size();
          first = false;
        } else if (r.fields.size() != fields) {
          broken("a record with " + std::to_string(r.fields.size()) + " fields, the header " + std::to_string(fields));
        }
        if (r.line < last_line || r.line == 0) broken("line numbers went back");
        last_line = r.line;
      });
    } catch (const hftrain::util::DataError&) {
      // a clean rejection
    }
  }
  return 0;
}
