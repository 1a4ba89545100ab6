// Code point ranges of the Unicode categories the byte-level BPE pre-tokenizer needs. The table
// is generated (tests/conformance/data_gen_unicode_tables.py) so that hftrain needs no ICU.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hftrain::data::unicode_tables {

struct CodeRange {
  uint32_t first;
  uint32_t last;  // inclusive
};

extern const CodeRange kLetters[];  // general category L*
extern const size_t kLettersSize;
extern const CodeRange kNumbers[];  // general category N*
extern const size_t kNumbersSize;

}  // namespace hftrain::data::unicode_tables
