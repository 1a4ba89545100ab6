#include "tokenizer/unicode.h"

#include <algorithm>
#include <unordered_map>

#include "tokenizer/unicode_tables.h"

namespace hftrain::tokenizer::unicode {
namespace {

using unicode_tables::CodeRange;

bool in_ranges(const CodeRange* ranges, size_t n, uint32_t cp) {
  const CodeRange* end = ranges + n;
  const CodeRange* it =
      std::upper_bound(ranges, end, cp, [](uint32_t value, const CodeRange& r) { return value < r.first; });
  return it != ranges && cp <= (it - 1)->last;
}

struct ByteMap {
  std::array<uint32_t, 256> to_char{};
  std::unordered_map<uint32_t, uint8_t> to_byte;
  ByteMap() {
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_char[static_cast<size_t>(b)] = printable ? static_cast<uint32_t>(b) : static_cast<uint32_t>(256 + extra++);
      to_byte[to_char[static_cast<size_t>(b)]] = static_cast<uint8_t>(b);
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap map;  // immutable after construction
  return map;
}

}  // namespace

uint32_t decode(std::string_view s, size_t i, size_t& len) {
  const auto c = static_cast<unsigned char>(s[i]);
  len = 1;
  if (c < 0x80) return c;
  size_t n = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return c;
  uint32_t cp = c & (0xFF >> (n + 1));
  for (size_t k = 1; k < n; ++k) {
    const auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return c;
    cp = (cp << 6) | (cc & 0x3F);
  }
  len = n;
  return cp;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool is_letter(uint32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return in_ranges(unicode_tables::kLetters, unicode_tables::kLettersSize, cp);
}

bool is_number(uint32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return in_ranges(unicode_tables::kNumbers, unicode_tables::kNumbersSize, cp);
}

bool is_whitespace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

#define HFTRAIN_RANGE_CLASS(fn, table) \
  bool fn(uint32_t cp) { return in_ranges(unicode_tables::table, unicode_tables::table##Size, cp); }
HFTRAIN_RANGE_CLASS(is_combining_mark, kCombiningMarks)
HFTRAIN_RANGE_CLASS(is_nonspacing_mark, kNonspacingMarks)
HFTRAIN_RANGE_CLASS(is_bert_control, kBertControl)
HFTRAIN_RANGE_CLASS(is_chinese, kChinese)
HFTRAIN_RANGE_CLASS(is_punctuation, kPunctuation)
HFTRAIN_RANGE_CLASS(is_numeric, kNumeric)
HFTRAIN_RANGE_CLASS(is_word, kWord)
#undef HFTRAIN_RANGE_CLASS

std::u32string to_code_points(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t len = 0;
    const uint32_t cp = decode(text, i, len);
    // decode() passes a stray byte through as its own value; here it is an error character, as
    // are overlong forms, surrogates and values past U+10FFFF (one byte at a time).
    static constexpr uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
    const bool bad = (len == 1 && static_cast<unsigned char>(text[i]) >= 0x80) || cp < kMinimum[len] ||
                     (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF;
    out.push_back(bad ? 0xFFFD : cp);
    i += bad ? 1 : len;
  }
  return out;
}

std::string to_utf8(std::u32string_view cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) append_utf8(out, cp);
  return out;
}

std::string valid_utf8(std::string_view text) {
  bool ascii = true;
  for (char c : text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) return std::string(text);
  return to_utf8(to_code_points(text));
}

uint32_t byte_to_char(uint8_t b) { return byte_map().to_char[b]; }

std::optional<std::string> byte_level_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t len = 0;
    uint32_t cp = decode(text, i, len);
    auto it = byte_map().to_byte.find(cp);
    if (it == byte_map().to_byte.end()) return std::nullopt;
    out.push_back(static_cast<char>(it->second));
    i += len;
  }
  return out;
}

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) append_utf8(out, byte_to_char(static_cast<uint8_t>(c)));
  return out;
}

}  // namespace hftrain::tokenizer::unicode
