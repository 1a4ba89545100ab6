#include "tokenizer/hf/hf_normalizer.h"

#include <vector>

#include "tokenizer/hf/hf_precompiled.h"
#include "tokenizer/hf/hf_split.h"
#include "tokenizer/unicode.h"
#include "tokenizer/unicode_normalize.h"

namespace hftrain::tokenizer::hf {
namespace {

using unicode::NormalForm;

bool is_ascii(const std::string& s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

class UnicodeForm : public Normalizer {
 public:
  explicit UnicodeForm(NormalForm form) : form_(form) {}
  void normalize(std::string& text) const override { text = unicode::normalize(text, form_); }

 private:
  NormalForm form_;
};

class Lowercase : public Normalizer {
 public:
  void normalize(std::string& text) const override {
    if (is_ascii(text)) {
      for (char& c : text) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
      return;
    }
    text = unicode::to_utf8(unicode::lowercase(unicode::to_code_points(text)));
  }
};

// StripAccents drops every combining mark; BertNormalizer only the non-spacing ones.
std::u32string without(const std::u32string& cps, bool (*is_accent)(uint32_t)) {
  std::u32string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) {
    if (!is_accent(cp)) out.push_back(cp);
  }
  return out;
}

class StripAccents : public Normalizer {
 public:
  void normalize(std::string& text) const override {
    if (!is_ascii(text))
      text = unicode::to_utf8(without(unicode::to_code_points(text), unicode::is_combining_mark));
  }
};

class Strip : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& text) const override {
    const std::u32string cps = unicode::to_code_points(text);
    size_t begin = 0, end = cps.size();
    if (left_) {
      while (begin < end && unicode::is_whitespace(cps[begin])) ++begin;
    }
    if (right_) {
      while (end > begin && unicode::is_whitespace(cps[end - 1])) --end;
    }
    if (begin != 0 || end != cps.size())
      text = unicode::to_utf8(std::u32string_view(cps).substr(begin, end - begin));
  }

 private:
  bool left_, right_;
};

class Replace : public Normalizer {
 public:
  Replace(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void normalize(std::string& text) const override { text = replace_all(text, pattern_, content_); }

 private:
  Pattern pattern_;
  std::string content_;
};

class Prepend : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(std::string& text) const override {
    if (text.empty()) return;
    if (text.size() + prefix_.size() > max_grown_size(text.size())) throw_too_long();
    text.insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

// SentencePiece's nmt_nfkc without the NFKC: control characters dropped, odd spaces made ' '.
class Nmt : public Normalizer {
 public:
  void normalize(std::string& text) const override {
    std::u32string out;
    for (char32_t cp : unicode::to_code_points(text)) {
      if ((cp >= 0x1 && cp <= 0x8) || cp == 0xB || (cp >= 0xE && cp <= 0x1F) || cp == 0x7F ||
          cp == 0x8F || cp == 0x9F) {
        continue;
      }
      const bool space = cp == 0x9 || cp == 0xA || cp == 0xC || cp == 0xD || cp == 0x1680 ||
                         (cp >= 0x200B && cp <= 0x200F) || cp == 0x2028 || cp == 0x2029 ||
                         cp == 0x2581 || cp == 0xFEFF || cp == 0xFFFD;
      out.push_back(space ? U' ' : cp);
    }
    text = unicode::to_utf8(out);
  }
};

class ByteLevelNormalizer : public Normalizer {
 public:
  void normalize(std::string& text) const override { text = unicode::byte_level_encode(text); }
};

class Bert : public Normalizer {
 public:
  Bert(bool clean_text, bool chinese, bool strip_accents, bool lowercase)
      : clean_text_(clean_text),
        chinese_(chinese),
        strip_accents_(strip_accents),
        lowercase_(lowercase) {}
  void normalize(std::string& text) const override {
    std::u32string cps = unicode::to_code_points(text);
    if (clean_text_) {
      std::u32string cleaned;
      cleaned.reserve(cps.size());
      for (char32_t cp : cps) {
        if (unicode::is_bert_control(cp)) continue;
        cleaned.push_back(unicode::is_whitespace(cp) ? U' ' : cp);
      }
      cps = std::move(cleaned);
    }
    if (chinese_) {
      std::u32string padded;
      padded.reserve(cps.size());
      for (char32_t cp : cps) {
        if (unicode::is_chinese(cp)) {
          padded += U' ';
          padded += cp;
          padded += U' ';
        } else {
          padded += cp;
        }
      }
      cps = std::move(padded);
    }
    if (strip_accents_)
      cps = without(unicode::normalize(cps, NormalForm::kNfd), unicode::is_nonspacing_mark);
    if (lowercase_) cps = unicode::lowercase(cps);
    text = unicode::to_utf8(cps);
  }

 private:
  bool clean_text_, chinese_, strip_accents_, lowercase_;
};

class Sequence : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  void normalize(std::string& text) const override {
    const size_t limit = max_grown_size(text.size());
    for (const auto& p : parts_) {
      p->normalize(text);
      if (text.size() > limit) throw_too_long();
    }
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

constexpr const char* kSupported =
    "the normalizers NFD, NFKD, NFC, NFKC, Lowercase, StripAccents, Strip, Replace, Prepend, Nmt, "
    "ByteLevel, BertNormalizer, Precompiled and Sequence";

}  // namespace

std::unique_ptr<Normalizer> parse_normalizer(const Json& json, const Where& where) {
  if (json.is_null()) return nullptr;
  const std::string type = type_of(json, where);
  if (type == "NFD") return std::make_unique<UnicodeForm>(NormalForm::kNfd);
  if (type == "NFKD") return std::make_unique<UnicodeForm>(NormalForm::kNfkd);
  if (type == "NFC") return std::make_unique<UnicodeForm>(NormalForm::kNfc);
  if (type == "NFKC") return std::make_unique<UnicodeForm>(NormalForm::kNfkc);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "StripAccents") return std::make_unique<StripAccents>();
  if (type == "Nmt") return std::make_unique<Nmt>();
  if (type == "ByteLevel") return std::make_unique<ByteLevelNormalizer>();
  if (type == "Strip") {
    return std::make_unique<Strip>(get_bool(json, "strip_left", where, true),
                                   get_bool(json, "strip_right", where, true));
  }
  if (type == "Replace") {
    return std::make_unique<Replace>(
        Pattern::from_spec(get_pattern(json, "pattern", where), where / "pattern"),
        get_string(json, "content", where));
  }
  if (type == "Prepend") return std::make_unique<Prepend>(get_string(json, "prepend", where));
  if (type == "Precompiled") return parse_precompiled(json, where);
  if (type == "BertNormalizer") {
    const bool lowercase = get_bool(json, "lowercase", where, true);
    return std::make_unique<Bert>(get_bool(json, "clean_text", where, true),
                                  get_bool(json, "handle_chinese_chars", where, true),
                                  get_bool(json, "strip_accents", where, lowercase), lowercase);
  }
  if (type == "Sequence") {
    const Json& list = get_array(json, "normalizers", where);
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (size_t i = 0; i < list.size(); ++i) {
      if (auto p = parse_normalizer(list[i], (where / "normalizers")[i]))
        parts.push_back(std::move(p));
    }
    return std::make_unique<Sequence>(std::move(parts));
  }
  unsupported(where / "type", type, kSupported);
}

}  // namespace hftrain::tokenizer::hf
