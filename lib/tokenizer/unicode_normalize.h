// Unicode normal forms (NFD, NFKD, NFC, NFKC) and lowercasing, as the Hugging Face tokenizers'
// normalizers apply them, from the generated tables in unicode_tables.h (no ICU).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace hftrain::tokenizer::unicode {

enum class NormalForm { kNfd, kNfkd, kNfc, kNfkc };

// `text` (UTF-8; invalid sequences become U+FFFD) in the normal form.
std::string normalize(std::string_view text, NormalForm form);
std::u32string normalize(std::u32string_view cps, NormalForm form);

// Each code point lowercased on its own (Rust's char::to_lowercase: no final-sigma rule).
std::u32string lowercase(std::u32string_view cps);

// The canonical combining class of `cp` (0 for starters).
uint32_t combining_class(uint32_t cp);

}  // namespace hftrain::tokenizer::unicode
