#include "tokenizer/unicode_normalize.h"

#include <algorithm>

#include "tokenizer/unicode.h"
#include "tokenizer/unicode_tables.h"

namespace hftrain::tokenizer::unicode {
namespace {

namespace t = unicode_tables;

// Hangul syllables decompose and compose by formula (Unicode chapter 3.12).
constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
                   kSCount = kLCount * kNCount;

const t::Mapping* find_mapping(const t::Mapping* table, size_t size, uint32_t cp) {
  const t::Mapping* end = table + size;
  const t::Mapping* it =
      std::lower_bound(table, end, cp, [](const t::Mapping& m, uint32_t v) { return m.cp < v; });
  return it != end && it->cp == cp ? it : nullptr;
}

void append_mapping(std::u32string& out, const t::Mapping& m) {
  for (uint32_t k = 0; k < m.length; ++k) out.push_back(t::kMappingPool[m.offset + k]);
}

void decompose_into(std::u32string& out, uint32_t cp, bool compat) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const uint32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  if (cp < 0xC0) {  // nothing below U+00A0 decomposes; U+00A0..U+00BF only compatibly
    if (!compat || cp < 0xA0) {
      out.push_back(cp);
      return;
    }
  }
  const t::Mapping* m =
      compat ? find_mapping(t::kCompatDecompositions, t::kCompatDecompositionsSize, cp)
             : find_mapping(t::kCanonicalDecompositions, t::kCanonicalDecompositionsSize, cp);
  if (!m) {
    out.push_back(cp);
    return;
  }
  append_mapping(out, *m);
}

// Canonical ordering: each run of non-starters sorted by combining class, stably.
void reorder(std::u32string& cps) {
  size_t i = 0;
  while (i < cps.size()) {
    if (combining_class(cps[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < cps.size() && combining_class(cps[j]) != 0) ++j;
    if (j - i > 1) {
      std::stable_sort(cps.begin() + static_cast<std::ptrdiff_t>(i),
                       cps.begin() + static_cast<std::ptrdiff_t>(j), [](char32_t a, char32_t b) {
                         return combining_class(a) < combining_class(b);
                       });
    }
    i = j;
  }
}

std::u32string decompose(std::u32string_view cps, bool compat) {
  std::u32string out;
  out.reserve(cps.size() + cps.size() / 4);
  for (char32_t cp : cps) decompose_into(out, cp, compat);
  reorder(out);
  return out;
}

char32_t compose_pair(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount) {
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  }
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount) {
    return a + (b - kTBase);
  }
  const t::Composition* end = t::kCompositions + t::kCompositionsSize;
  const t::Composition* it =
      std::lower_bound(t::kCompositions, end, std::make_pair(a, b),
                       [](const t::Composition& c, const std::pair<char32_t, char32_t>& v) {
                         return c.first != v.first ? c.first < v.first : c.second < v.second;
                       });
  return it != end && it->first == a && it->second == b ? it->composed : 0;
}

// The canonical composition algorithm over a decomposed, reordered string.
void compose(std::u32string& cps) {
  if (cps.empty()) return;
  size_t starter = std::u32string::npos;  // index of the last starter in the output
  uint32_t last_class = 0;
  size_t out = 0;
  for (size_t i = 0; i < cps.size(); ++i) {
    const char32_t cp = cps[i];
    const uint32_t cls = combining_class(cp);
    if (starter != std::u32string::npos) {
      // Not blocked: nothing between the starter and cp, or everything between has a lower class.
      const bool adjacent = out == starter + 1;
      if (adjacent || (last_class != 0 && last_class < cls)) {
        if (char32_t c = compose_pair(cps[starter], cp); c != 0) {
          cps[starter] = c;
          continue;
        }
      }
    }
    if (cls == 0) {
      starter = out;
      last_class = 0;
    } else {
      last_class = cls;
    }
    cps[out++] = cp;
  }
  cps.resize(out);
}

}  // namespace

uint32_t combining_class(uint32_t cp) {
  if (cp < 0x300) return 0;
  const t::CccRange* end = t::kCombiningClasses + t::kCombiningClassesSize;
  const t::CccRange* it = std::upper_bound(
      t::kCombiningClasses, end, cp, [](uint32_t v, const t::CccRange& r) { return v < r.first; });
  return it != t::kCombiningClasses && cp <= (it - 1)->last ? (it - 1)->ccc : 0;
}

std::u32string normalize(std::u32string_view cps, NormalForm form) {
  const bool compat = form == NormalForm::kNfkd || form == NormalForm::kNfkc;
  std::u32string out = decompose(cps, compat);
  if (form == NormalForm::kNfc || form == NormalForm::kNfkc) compose(out);
  return out;
}

std::string normalize(std::string_view text, NormalForm form) {
  bool ascii = true;
  for (char c : text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) return std::string(text);  // ASCII is in every normal form
  return to_utf8(normalize(to_code_points(text), form));
}

std::u32string lowercase(std::u32string_view cps) {
  std::u32string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) {
    if (cp < 0x80) {
      out.push_back(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
      continue;
    }
    const t::Mapping* m = find_mapping(t::kLowercase, t::kLowercaseSize, cp);
    if (m) {
      append_mapping(out, *m);
    } else {
      out.push_back(cp);
    }
  }
  return out;
}

}  // namespace hftrain::tokenizer::unicode
