#include "tokenizer/hf/hf_pre_tokenizer.h"

#include "tokenizer/hf/hf_split.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/unicode.h"

namespace hftrain::tokenizer::hf {
namespace {

// Cuts every piece into the ranges `ranges_of(text)` gives.
template <typename F>
void refine(std::vector<Piece>& pieces, F&& ranges_of) {
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (Piece& p : pieces) {
    for (const auto& [begin, end] : ranges_of(std::string_view(p.text))) {
      if (end > begin)
        out.push_back(Piece{p.text.substr(begin, end - begin), p.at_start && begin == 0});
    }
  }
  pieces = std::move(out);
}

class SplitPre : public PreTokenizer {
 public:
  SplitPre(Pattern pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    refine(pieces, [&](std::string_view t) { return split(t, pattern_, behavior_, invert_); });
  }

 private:
  Pattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

class ByteLevel : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space), use_regex_(use_regex) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    std::vector<Piece> out;
    out.reserve(pieces.size());
    for (Piece& p : pieces) {
      if (add_prefix_space_ && (p.text.empty() || p.text.front() != ' ')) p.text.insert(0, " ");
      if (!use_regex_) {
        out.push_back(Piece{unicode::byte_level_encode(p.text), p.at_start});
        continue;
      }
      bool first = true;
      for (std::string_view q : gpt2_split(p.text)) {
        out.push_back(Piece{unicode::byte_level_encode(q), p.at_start && first});
        first = false;
      }
    }
    pieces = std::move(out);
  }

 private:
  bool add_prefix_space_, use_regex_;
};

class Metaspace : public PreTokenizer {
 public:
  enum class Prepend { kAlways, kNever, kFirst };
  Metaspace(char32_t replacement, Prepend prepend, bool split)
      : replacement_(replacement), prepend_(prepend), split_(split) {
    unicode::append_utf8(rep_, replacement);
  }
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    for (Piece& p : pieces) {
      p.text = replace_all(p.text, Pattern::character(U' '), rep_);
      const bool starts = p.text.compare(0, rep_.size(), rep_) == 0;
      if (!starts &&
          (prepend_ == Prepend::kAlways || (prepend_ == Prepend::kFirst && p.at_start))) {
        p.text.insert(0, rep_);
      }
    }
    if (split_) {
      const Pattern at_rep = Pattern::character(replacement_);
      refine(pieces,
             [&](std::string_view t) { return split(t, at_rep, SplitBehavior::kMergedWithNext); });
    }
  }

 private:
  char32_t replacement_;
  Prepend prepend_;
  bool split_;
  std::string rep_;
};

// \w+|[^\w\s]+ : runs of word characters and runs of other non-space characters.
class Whitespace : public PreTokenizer {
 public:
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    refine(pieces, [](std::string_view t) {
      std::vector<std::pair<size_t, size_t>> out;
      int run = 0;  // 0: whitespace, 1: word, 2: other
      size_t start = 0;
      for (size_t i = 0; i < t.size();) {
        size_t len = 1;
        const uint32_t cp = unicode::decode(t, i, len);
        const int cls = unicode::is_word(cp) ? 1 : unicode::is_whitespace(cp) ? 0 : 2;
        if (cls != run) {
          if (run != 0) out.emplace_back(start, i);
          start = i;
          run = cls;
        }
        i += len;
      }
      if (run != 0) out.emplace_back(start, t.size());
      return out;
    });
  }
};

class Sequence : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    for (const auto& p : parts_) p->pre_tokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

std::unique_ptr<PreTokenizer> char_split(bool (*fn)(uint32_t), SplitBehavior behavior) {
  return std::make_unique<SplitPre>(Pattern::predicate(fn), behavior, false);
}

bool is_whitespace(uint32_t cp) {
  return unicode::is_whitespace(cp);
}
bool is_punctuation(uint32_t cp) {
  return unicode::is_punctuation(cp);
}
bool is_numeric(uint32_t cp) {
  return unicode::is_numeric(cp);
}

class BertPre : public PreTokenizer {
 public:
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    spaces_->pre_tokenize(pieces);
    punctuation_->pre_tokenize(pieces);
  }

 private:
  std::unique_ptr<PreTokenizer> spaces_ = char_split(is_whitespace, SplitBehavior::kRemoved);
  std::unique_ptr<PreTokenizer> punctuation_ = char_split(is_punctuation, SplitBehavior::kIsolated);
};

Metaspace::Prepend prepend_scheme(const Json& json, const Where& where) {
  if (const Json* s = member(json, "prepend_scheme", where)) {
    const std::string v = as_string(*s, where / "prepend_scheme");
    if (v == "always") return Metaspace::Prepend::kAlways;
    if (v == "never") return Metaspace::Prepend::kNever;
    if (v == "first") return Metaspace::Prepend::kFirst;
    unsupported(where / "prepend_scheme", v, "always, never and first");
  }
  // Files from before prepend_scheme: add_prefix_space.
  return get_bool(json, "add_prefix_space", where, true) ? Metaspace::Prepend::kAlways
                                                         : Metaspace::Prepend::kNever;
}

constexpr const char* kSupported =
    "the pre-tokenizers ByteLevel, Split, Metaspace, Whitespace, WhitespaceSplit, "
    "BertPreTokenizer, Punctuation, "
    "Digits, CharDelimiterSplit and Sequence";

}  // namespace

std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const Json& json, const Where& where) {
  if (json.is_null()) return nullptr;
  const std::string type = type_of(json, where);
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevel>(get_bool(json, "add_prefix_space", where, true),
                                       get_bool(json, "use_regex", where, true));
  }
  if (type == "Split") {
    return std::make_unique<SplitPre>(
        Pattern::from_spec(get_pattern(json, "pattern", where), where / "pattern"),
        parse_behavior(get_string(json, "behavior", where), where / "behavior"),
        get_bool(json, "invert", where, false));
  }
  if (type == "Metaspace") {
    return std::make_unique<Metaspace>(get_char(json, "replacement", where, U'\u2581'),
                                       prepend_scheme(json, where),
                                       get_bool(json, "split", where, true));
  }
  if (type == "Whitespace") return std::make_unique<Whitespace>();
  if (type == "WhitespaceSplit") return char_split(is_whitespace, SplitBehavior::kRemoved);
  if (type == "BertPreTokenizer") return std::make_unique<BertPre>();
  if (type == "Punctuation") {
    return char_split(
        is_punctuation,
        parse_behavior(get_string(json, "behavior", where, "Isolated"), where / "behavior"));
  }
  if (type == "Digits") {
    return char_split(is_numeric, get_bool(json, "individual_digits", where, false)
                                      ? SplitBehavior::kIsolated
                                      : SplitBehavior::kContiguous);
  }
  if (type == "CharDelimiterSplit") {
    return std::make_unique<SplitPre>(Pattern::character(get_char(json, "delimiter", where, U' ')),
                                      SplitBehavior::kRemoved, false);
  }
  if (type == "Sequence") {
    const Json& list = get_array(json, "pretokenizers", where);
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (size_t i = 0; i < list.size(); ++i) {
      if (auto p = parse_pre_tokenizer(list[i], (where / "pretokenizers")[i]))
        parts.push_back(std::move(p));
    }
    return std::make_unique<Sequence>(std::move(parts));
  }
  unsupported(where / "type", type, kSupported);
}

}  // namespace hftrain::tokenizer::hf
