// Python `str` behaviour on UTF-8 text (see text.h for the limits of the case tables).
#include "tokenizer/jinja/text.h"

namespace hftrain::tokenizer::jinja::text {
namespace {

constexpr uint32_t kReplacement = 0xFFFD;

// One-to-one lowercase -> uppercase; 0 when the code point has no simple uppercase.
uint32_t simple_upper(uint32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0x80) return 0;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c == 0xB5) return 0x39C;
  if (c >= 0x100 && c <= 0x17F) {
    if (c == 0x131) return 'I';
    if (c == 0x17F) return 'S';
    if ((c <= 0x12F || (c >= 0x132 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) && (c & 1)) return c - 1;
    if (((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) && !(c & 1)) return c - 1;
    return 0;
  }
  if (c >= 0x3B1 && c <= 0x3CB && c != 0x3C2) return c - 32;
  if (c == 0x3C2) return 0x3A3;
  if (c == 0x3AC) return 0x386;
  if (c >= 0x3AD && c <= 0x3AF) return c - 37;
  if (c == 0x3CC) return 0x38C;
  if (c == 0x3CD || c == 0x3CE) return c - 63;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  if (((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF) || (c >= 0x4D0 && c <= 0x52F)) && (c & 1)) return c - 1;
  if (c == 0x4CF) return 0x4C0;
  if (c >= 0x4C1 && c <= 0x4CE && !(c & 1)) return c - 1;
  return 0;
}

// One-to-one uppercase -> lowercase; 0 when none.
uint32_t simple_lower(uint32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return 0;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c >= 0x100 && c <= 0x17F) {
    if (c == 0x178) return 0xFF;
    if ((c <= 0x12F || (c >= 0x132 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) && !(c & 1)) return c + 1;
    if (((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) && (c & 1)) return c + 1;
    return 0;
  }
  if (c >= 0x391 && c <= 0x3AB && c != 0x3A2) return c + 32;
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 37;
  if (c == 0x38C) return 0x3CC;
  if (c == 0x38E || c == 0x38F) return c + 63;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  if (((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF) || (c >= 0x4D0 && c <= 0x52F)) && !(c & 1))
    return c + 1;
  if (c == 0x4C0) return 0x4CF;
  if (c >= 0x4C1 && c <= 0x4CE && (c & 1)) return c + 1;
  return 0;
}

void append_upper(std::string& out, uint32_t c) {
  if (c == 0xDF) {
    out += "SS";
  } else if (c == 0x149) {
    append_utf8(out, 0x2BC);
    out += 'N';
  } else {
    const uint32_t u = simple_upper(c);
    append_utf8(out, u ? u : c);
  }
}

void append_lower(std::string& out, uint32_t c) {
  if (c == 0x130) {
    out += 'i';
    append_utf8(out, 0x307);
  } else {
    const uint32_t l = simple_lower(c);
    append_utf8(out, l ? l : c);
  }
}

// Title case of one code point (Python's str.title / capitalize of the first letter).
void append_title(std::string& out, uint32_t c) {
  if (c == 0xDF) {
    out += "Ss";
  } else if (c == 0x149) {
    append_utf8(out, 0x2BC);
    out += 'N';
  } else {
    const uint32_t u = simple_upper(c);
    append_utf8(out, u ? u : c);
  }
}

bool is_cased(uint32_t c) {
  return is_cased_upper(c) || is_cased_lower(c);
}

bool in_chars(uint32_t cp, const std::u32string& set) {
  return set.find(cp) != std::u32string::npos;
}

}  // namespace

uint32_t decode(std::string_view s, size_t i, size_t& len) {
  const auto c = static_cast<unsigned char>(s[i]);
  len = 1;
  if (c < 0x80) return c;
  const size_t n = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return kReplacement;
  uint32_t cp = c & (0xFFu >> (n + 1));
  for (size_t k = 1; k < n; ++k) {
    const auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return kReplacement;
    cp = (cp << 6) | (cc & 0x3Fu);
  }
  len = n;
  return cp;
}

std::u32string to_u32(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0, len = 0; i < s.size(); i += len) out.push_back(decode(s, i, len));
  return out;
}

std::string to_utf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) append_utf8(out, c);
  return out;
}

bool is_ascii(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

size_t length(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

size_t byte_offset(std::string_view s, size_t index) {
  size_t i = 0;
  for (size_t len = 0; i < s.size() && index > 0; i += len, --index) decode(s, i, len);
  return i;
}

bool is_space(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_printable(uint32_t c) {
  if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) return false;
  if (c < 0x600) return true;
  if ((c >= 0x600 && c <= 0x605) || c == 0x61C || c == 0x6DD || c == 0x70F || c == 0x890 || c == 0x891 || c == 0x8E2 ||
      c == 0x1680 || c == 0x180E)
    return false;
  if ((c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F) || (c >= 0x205F && c <= 0x206F)) return false;
  if (c == 0x3000 || (c >= 0xD800 && c <= 0xF8FF) || (c >= 0xFDD0 && c <= 0xFDEF) || c == 0xFEFF) return false;
  if ((c >= 0xFFF9 && c <= 0xFFFB) || (c & 0xFFFE) == 0xFFFE) return false;
  if (c == 0x110BD || c == 0x110CD || (c >= 0x13430 && c <= 0x1343F) || (c >= 0x1BCA0 && c <= 0x1BCA3) ||
      (c >= 0x1D173 && c <= 0x1D17A))
    return false;
  if ((c >= 0xE0000 && c <= 0xE00FF) || c >= 0xF0000) return false;
  return c <= 0x10FFFF;
}

bool is_cased_upper(uint32_t c) {
  return simple_lower(c) != 0 || c == 0x130;
}
bool is_cased_lower(uint32_t c) {
  return simple_upper(c) != 0 || c == 0xDF || c == 0x149 || c == 0x138 || c == 0x390 || c == 0x3B0;
}

bool is_alpha(uint32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  if (is_cased(c) || c == 0xAA || c == 0xBA) return true;
  return (c >= 0x3040 && c <= 0x30FF) || (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xAC00 && c <= 0xD7A3) ||
         (c >= 0x5D0 && c <= 0x5EA) || (c >= 0x620 && c <= 0x64A) || (c >= 0x904 && c <= 0x939);
}

bool is_digit(uint32_t c) {
  return c >= '0' && c <= '9';
}

std::string upper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0, len = 0; i < s.size(); i += len) append_upper(out, decode(s, i, len));
  return out;
}

std::string lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0, len = 0; i < s.size(); i += len) append_lower(out, decode(s, i, len));
  return out;
}

std::string capitalize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0, len = 0; i < s.size(); i += len) {
    const uint32_t c = decode(s, i, len);
    if (i == 0)
      append_title(out, c);
    else
      append_lower(out, c);
  }
  return out;
}

std::string py_title(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool previous_cased = false;
  for (size_t i = 0, len = 0; i < s.size(); i += len) {
    const uint32_t c = decode(s, i, len);
    if (previous_cased)
      append_lower(out, c);
    else
      append_title(out, c);
    previous_cased = is_cased(c);
  }
  return out;
}

std::string swapcase(std::string_view s) {
  std::string out;
  for (size_t i = 0, len = 0; i < s.size(); i += len) {
    const uint32_t c = decode(s, i, len);
    if (is_cased_upper(c))
      append_lower(out, c);
    else if (is_cased_lower(c))
      append_upper(out, c);
    else
      append_utf8(out, c);
  }
  return out;
}

std::string strip(std::string_view s, const std::string* chars, bool left, bool right) {
  const std::u32string cps = to_u32(s);
  const std::u32string set = chars ? to_u32(*chars) : std::u32string();
  auto strippable = [&](char32_t c) { return chars ? in_chars(c, set) : is_space(c); };
  size_t b = 0, e = cps.size();
  if (left)
    while (b < e && strippable(cps[b])) ++b;
  if (right)
    while (e > b && strippable(cps[e - 1])) --e;
  if (b == 0 && e == cps.size()) return std::string(s);
  return to_utf8(std::u32string_view(cps).substr(b, e - b));
}

std::vector<std::string> split(std::string_view s, const std::string* sep, int64_t maxsplit, bool from_right) {
  std::vector<std::string> out;
  if (sep) {
    if (!from_right) {
      size_t start = 0;
      while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
        const size_t at = s.find(*sep, start);
        if (at == std::string_view::npos) break;
        out.emplace_back(s.substr(start, at - start));
        start = at + sep->size();
      }
      out.emplace_back(s.substr(start));
    } else {
      size_t end = s.size();
      std::vector<std::string> rev;
      while (maxsplit < 0 || static_cast<int64_t>(rev.size()) < maxsplit) {
        if (end < sep->size()) break;
        const size_t at = s.rfind(*sep, end - sep->size());
        if (at == std::string_view::npos) break;
        rev.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
        end = at;
      }
      rev.emplace_back(s.substr(0, end));
      out.assign(rev.rbegin(), rev.rend());
    }
    return out;
  }
  const std::u32string cps = to_u32(s);
  if (!from_right) {
    size_t i = 0;
    while (true) {
      while (i < cps.size() && is_space(cps[i])) ++i;
      if (i == cps.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        out.push_back(to_utf8(std::u32string_view(cps).substr(i)));
        break;
      }
      size_t j = i;
      while (j < cps.size() && !is_space(cps[j])) ++j;
      out.push_back(to_utf8(std::u32string_view(cps).substr(i, j - i)));
      i = j;
    }
    return out;
  }
  size_t e = cps.size();
  while (true) {
    while (e > 0 && is_space(cps[e - 1])) --e;
    if (e == 0) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      out.push_back(to_utf8(std::u32string_view(cps).substr(0, e)));
      break;
    }
    size_t b = e;
    while (b > 0 && !is_space(cps[b - 1])) --b;
    out.push_back(to_utf8(std::u32string_view(cps).substr(b, e - b)));
    e = b;
  }
  return {out.rbegin(), out.rend()};
}

std::vector<std::string> splitlines(std::string_view s) {
  std::vector<std::string> out;
  const std::u32string cps = to_u32(s);
  size_t start = 0;
  for (size_t i = 0; i < cps.size(); ++i) {
    const char32_t c = cps[i];
    const bool brk = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
                     c == 0x85 || c == 0x2028 || c == 0x2029;
    if (!brk) continue;
    out.push_back(to_utf8(std::u32string_view(cps).substr(start, i - start)));
    if (c == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
    start = i + 1;
  }
  if (start < cps.size()) out.push_back(to_utf8(std::u32string_view(cps).substr(start)));
  return out;
}

std::string replace(std::string_view s, std::string_view old_s, std::string_view new_s, int64_t count) {
  std::string out;
  if (old_s.empty()) {
    int64_t done = 0;
    for (size_t i = 0, len = 0; i < s.size(); i += len) {
      if (count < 0 || done < count) {
        out += new_s;
        ++done;
      }
      decode(s, i, len);
      out += s.substr(i, len);
    }
    if (count < 0 || done < count) out += new_s;
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t at = s.find(old_s, start);
    if (at == std::string_view::npos) break;
    out += s.substr(start, at - start);
    out += new_s;
    start = at + old_s.size();
    ++done;
  }
  out += s.substr(start);
  return out;
}

int64_t count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(length(s)) + 1;
  int64_t n = 0;
  for (size_t at = s.find(sub); at != std::string_view::npos; at = s.find(sub, at + sub.size())) ++n;
  return n;
}

}  // namespace hftrain::tokenizer::jinja::text
