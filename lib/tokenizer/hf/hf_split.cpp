#include "tokenizer/hf/hf_split.h"

#include <algorithm>

#include "tokenizer/unicode.h"
#include "util/error.h"

namespace hftrain::tokenizer::hf {

Pattern Pattern::literal(std::string text) {
  Pattern p;
  p.kind_ = Kind::kLiteral;
  p.literal_ = std::move(text);
  return p;
}

Pattern Pattern::regex(const std::string& pattern, const Where& where) {
  Pattern p;
  p.kind_ = Kind::kRegex;
  p.regex_ =
      std::make_shared<RegexSplitter>(pattern, *where.file + ": " + where.path);
  return p;
}

Pattern Pattern::character(char32_t c) {
  Pattern p;
  p.kind_ = Kind::kCharacter;
  p.char_ = c;
  return p;
}

Pattern Pattern::predicate(bool (*fn)(uint32_t)) {
  Pattern p;
  p.kind_ = Kind::kPredicate;
  p.predicate_ = fn;
  return p;
}

Pattern Pattern::from_spec(const PatternSpec& spec, const Where& where) {
  return spec.regex ? regex(spec.text, where / "Regex") : literal(spec.text);
}

std::vector<Span> Pattern::cover(std::string_view text) const {
  std::vector<Span> out;
  size_t done = 0;  // text before this is covered
  auto add_match = [&](size_t begin, size_t end) {
    if (begin > done) out.push_back({done, begin, false});
    out.push_back({begin, end, true});
    done = end;
  };
  switch (kind_) {
    case Kind::kLiteral:
      if (literal_.empty()) break;  // an empty pattern matches nothing (as tokenizers)
      for (size_t at = text.find(literal_); at != std::string_view::npos;
           at = text.find(literal_, done)) {
        add_match(at, at + literal_.size());
      }
      break;
    case Kind::kRegex:
      for (const auto& [begin, end] : regex_->matches(text)) add_match(begin, end);
      break;
    case Kind::kCharacter:
    case Kind::kPredicate:
      for (size_t i = 0; i < text.size();) {
        size_t len = 1;
        const uint32_t cp = unicode::decode(text, i, len);
        if (kind_ == Kind::kCharacter ? cp == char_ : predicate_(cp)) add_match(i, i + len);
        i += len;
      }
      break;
  }
  if (done < text.size()) out.push_back({done, text.size(), false});
  return out;
}

size_t max_grown_size(size_t size) {
  return 64 * size + 4096;
}

void throw_too_long() {
  throw util::DataError(
      "the tokenizer's normalizer or decoder makes a text more than 64 times longer",
      "is the tokenizer.json damaged? (a Replace or Prepend that grows the text without bound)");
}

SplitBehavior parse_behavior(const std::string& name, const Where& where) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  unsupported(where, name, "Removed, Isolated, MergedWithPrevious, MergedWithNext and Contiguous");
}

std::vector<std::pair<size_t, size_t>> split(std::string_view text, const Pattern& pattern,
                                             SplitBehavior behavior, bool invert) {
  std::vector<Span> spans = pattern.cover(text);
  if (invert) {
    for (Span& s : spans) s.match = !s.match;
  }
  std::vector<Span> kept;  // match: the piece is dropped (kRemoved only)
  kept.reserve(spans.size());
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::kRemoved:
      kept = spans;
      break;
    case SplitBehavior::kIsolated:
      for (const Span& s : spans) kept.push_back({s.begin, s.end, false});
      break;
    case SplitBehavior::kContiguous:
      for (size_t i = 0; i < spans.size(); ++i) {
        if (i > 0 && spans[i].match == previous_match) {
          kept.back().end = spans[i].end;
        } else {
          kept.push_back({spans[i].begin, spans[i].end, false});
        }
        previous_match = spans[i].match;
      }
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const Span& s : spans) {
        if (s.match && !previous_match && !kept.empty()) {
          kept.back().end = s.end;
        } else {
          kept.push_back({s.begin, s.end, false});
        }
        previous_match = s.match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (size_t k = spans.size(); k-- > 0;) {
        const Span& s = spans[k];
        if (s.match && !previous_match && !kept.empty()) {
          kept.back().begin = s.begin;
        } else {
          kept.push_back({s.begin, s.end, false});
        }
        previous_match = s.match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
  }
  std::vector<std::pair<size_t, size_t>> out;
  out.reserve(kept.size());
  for (const Span& s : kept) {
    if (!s.match && s.end > s.begin) out.emplace_back(s.begin, s.end);
  }
  return out;
}

std::string replace_all(std::string_view text, const Pattern& pattern, const std::string& content) {
  std::string out;
  out.reserve(text.size());
  const size_t limit = max_grown_size(text.size());
  for (const Span& s : pattern.cover(text)) {
    if (s.match) {
      if (out.size() + content.size() > limit) throw_too_long();
      out += content;
    } else {
      out.append(text.substr(s.begin, s.end - s.begin));
    }
  }
  return out;
}

}  // namespace hftrain::tokenizer::hf
