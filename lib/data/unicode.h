// The little Unicode the byte-level BPE needs: UTF-8 decoding, the letter/number/whitespace
// classes of the GPT-2 pre-tokenizer pattern, and GPT-2's byte <-> printable-character map that
// tokenizer.json vocabularies are written in.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hftrain::data::unicode {

// Decodes the code point at s[i] and sets `len` to its byte length. A byte that does not start a
// valid sequence decodes as itself with length 1 (never fails: the pre-tokenizer must see every
// byte).
uint32_t decode(std::string_view s, size_t i, size_t& len);
void append_utf8(std::string& out, uint32_t cp);

bool is_letter(uint32_t cp);      // \p{L}
bool is_number(uint32_t cp);      // \p{N}
bool is_whitespace(uint32_t cp);  // \s (Unicode White_Space, as Oniguruma matches it)

// GPT-2's bytes_to_unicode(): byte b is written as this code point in vocabularies.
uint32_t byte_to_char(uint8_t b);
// The raw bytes of a byte-level vocabulary string; nullopt when a character is not one of the
// 256 byte characters.
std::optional<std::string> byte_level_decode(std::string_view text);
std::string byte_level_encode(std::string_view bytes);

}  // namespace hftrain::data::unicode
