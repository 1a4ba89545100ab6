// Patterns and split behaviours of the Hugging Face tokenizers library, as its Split, Punctuation,
// Digits, Metaspace, WhitespaceSplit and BertPreTokenizer pre-tokenizers and its Replace
// normalizer use them: a pattern covers a text with match and non-match spans, and a behaviour
// (removed, isolated, merged with the previous or next piece, contiguous) turns those into pieces.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/hf/hf_json.h"
#include "tokenizer/regex_split.h"

namespace hftrain::tokenizer::hf {

struct Span {
  size_t begin;
  size_t end;
  bool match;
};

class Pattern {
 public:
  static Pattern literal(std::string text);  // every occurrence, left to right
  static Pattern regex(const std::string& pattern, const Where& where);  // PCRE2, as Oniguruma
  static Pattern character(char32_t c);            // each occurrence of one character
  static Pattern predicate(bool (*fn)(uint32_t));  // each character for which fn is true
  static Pattern from_spec(const PatternSpec& spec, const Where& where);

  // Spans covering `text` in order (match and non-match alternating or not), none empty; an
  // empty text has none.
  std::vector<Span> cover(std::string_view text) const;

 private:
  enum class Kind { kLiteral, kRegex, kCharacter, kPredicate };
  Kind kind_ = Kind::kLiteral;
  std::string literal_;
  std::shared_ptr<const RegexSplitter> regex_;
  char32_t char_ = 0;
  bool (*predicate_)(uint32_t) = nullptr;
};

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };
SplitBehavior parse_behavior(const std::string& name, const Where& where);

// The [begin, end) byte ranges of the pieces `text` splits into, none empty.
std::vector<std::pair<size_t, size_t>> split(std::string_view text, const Pattern& pattern,
                                             SplitBehavior behavior, bool invert = false);

// How long a normalized or decoded text may grow from `size` bytes (NFKD and CJK padding stay far
// below), and the DataError for one that grows past it: a damaged file must not exhaust memory.
size_t max_grown_size(size_t size);
[[noreturn]] void throw_too_long();

// `text` with every match of `pattern` replaced by `content`. Throws DataError past max_grown_size.
std::string replace_all(std::string_view text, const Pattern& pattern, const std::string& content);

}  // namespace hftrain::tokenizer::hf
