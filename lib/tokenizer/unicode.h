// The little Unicode the tokenizers need: UTF-8 decoding, the letter/number/whitespace classes
// of the GPT-2 pre-tokenizer pattern, the character classes of the Hugging Face normalizers and
// pre-tokenizers, and GPT-2's byte <-> printable-character map that byte-level tokenizer.json
// vocabularies are written in. Normal forms and lowercasing: unicode_normalize.h.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hftrain::tokenizer::unicode {

// Decodes the code point at s[i] and sets `len` to its byte length. A byte that does not start a
// valid sequence decodes as itself with length 1 (never fails: the pre-tokenizer must see every
// byte).
uint32_t decode(std::string_view s, size_t i, size_t& len);
void append_utf8(std::string& out, uint32_t cp);

bool is_letter(uint32_t cp);      // \p{L}
bool is_number(uint32_t cp);      // \p{N}
bool is_whitespace(uint32_t cp);  // \s (Unicode White_Space, as Oniguruma matches it)

// The classes of the Hugging Face tokenizers library (unicode_tables.h says where they come from).
bool is_combining_mark(uint32_t cp);   // M*: what StripAccents removes
bool is_nonspacing_mark(uint32_t cp);  // Mn: what BertNormalizer's strip_accents removes
bool is_bert_control(uint32_t cp);     // what BertNormalizer's clean_text removes
bool is_chinese(uint32_t cp);          // CJK ideographs BertNormalizer pads with spaces
bool is_punctuation(uint32_t cp);      // ASCII punctuation and P*
bool is_numeric(uint32_t cp);          // Rust char::is_numeric (Digits)
bool is_word(uint32_t cp);             // regex \w (Rust regex crate)

// The code points of UTF-8 `text`; a byte that starts no valid sequence becomes U+FFFD.
std::u32string to_code_points(std::string_view text);
std::string to_utf8(std::u32string_view cps);
// `text` with every invalid UTF-8 sequence replaced by U+FFFD (unchanged when valid).
std::string valid_utf8(std::string_view text);

// GPT-2's bytes_to_unicode(): byte b is written as this code point in vocabularies.
uint32_t byte_to_char(uint8_t b);
// The raw bytes of a byte-level vocabulary string; nullopt when a character is not one of the
// 256 byte characters.
std::optional<std::string> byte_level_decode(std::string_view text);
std::string byte_level_encode(std::string_view bytes);

}  // namespace hftrain::tokenizer::unicode
