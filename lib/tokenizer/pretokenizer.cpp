#include "tokenizer/pretokenizer.h"

#include "tokenizer/unicode.h"

namespace hftrain::tokenizer {
namespace {

enum class Class { kLetter, kNumber, kSpace, kOther };

struct Char {
  size_t offset;
  uint32_t cp;
  Class cls;
};

Class classify(uint32_t cp) {
  if (unicode::is_letter(cp)) return Class::kLetter;
  if (unicode::is_number(cp)) return Class::kNumber;
  if (unicode::is_whitespace(cp)) return Class::kSpace;
  return Class::kOther;
}

// Length (in characters) of a contraction ('s 't 're 've 'm 'll 'd) at i, or 0.
size_t contraction(const std::vector<Char>& c, size_t i) {
  if (c[i].cp != '\'' || i + 1 >= c.size()) return 0;
  const uint32_t a = c[i + 1].cp;
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 < c.size()) {
    const uint32_t b = c[i + 2].cp;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  }
  return 0;
}

}  // namespace

std::vector<std::string_view> gpt2_split(std::string_view text) {
  std::vector<Char> c;
  c.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t len = 0;
    uint32_t cp = unicode::decode(text, i, len);
    c.push_back(Char{i, cp, classify(cp)});
    i += len;
  }
  std::vector<std::string_view> out;
  auto emit = [&](size_t from, size_t to) {
    const size_t begin = c[from].offset;
    const size_t end = to < c.size() ? c[to].offset : text.size();
    out.push_back(text.substr(begin, end - begin));
  };
  const size_t n = c.size();
  size_t i = 0;
  while (i < n) {
    if (size_t k = contraction(c, i); k != 0) {
      emit(i, i + k);
      i += k;
      continue;
    }
    // " ?X+" for X in letters, numbers, others: an optional single space, then a run of one class.
    size_t start = i;
    size_t j = i;
    if (c[j].cp == ' ' && j + 1 < n && c[j + 1].cls != Class::kSpace) ++j;
    if (c[j].cls != Class::kSpace) {
      const Class cls = c[j].cls;
      while (j < n && c[j].cls == cls) ++j;
      emit(start, j);
      i = j;
      continue;
    }
    // A whitespace run: "\s+(?!\S)" leaves the last space to join the word that follows;
    // a single space before a non-space falls through to "\s+".
    while (j < n && c[j].cls == Class::kSpace) ++j;
    if (j < n && j - i >= 2) --j;
    emit(start, j);
    i = j;
  }
  return out;
}

}  // namespace hftrain::tokenizer
