#include "tokenizer/hf/hf_decoder.h"

#include "tokenizer/hf/hf_split.h"
#include "tokenizer/unicode.h"

namespace hftrain::tokenizer::hf {
namespace {

class ByteLevel : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string out;
    for (const std::string& t : tokens) {
      // A token with a character outside the byte alphabet (an added token) stays as it is.
      if (auto bytes = unicode::byte_level_decode(t)) {
        out += *bytes;
      } else {
        out += t;
      }
    }
    tokens.assign(1, std::move(out));
  }
};

class Metaspace : public Decoder {
 public:
  Metaspace(char32_t replacement, bool strip_first) : strip_first_(strip_first) {
    unicode::append_utf8(rep_, replacement);
  }
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      // In the first token every replacement character goes (tokenizers does the same), elsewhere
      // each becomes a space.
      tokens[i] = replace_all(tokens[i], Pattern::literal(rep_), i == 0 && strip_first_ ? "" : " ");
    }
  }

 private:
  std::string rep_;
  bool strip_first_;
};

std::string replace_every(std::string s, const std::string& from, const std::string& to) {
  if (from.empty()) return s;
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

class WordPiece : public Decoder {
 public:
  WordPiece(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        if (!prefix_.empty() && t.compare(0, prefix_.size(), prefix_) == 0) {
          t.erase(0, prefix_.size());
        } else {
          t.insert(0, " ");
        }
      }
      if (cleanup_) t = cleanup(t);
    }
  }

 private:
  // BERT's clean_up_tokenization: spaces before punctuation and contractions go.
  static std::string cleanup(std::string s) {
    static const std::pair<const char*, const char*> kRules[] = {
        {" .", "."},   {" ?", "?"},     {" !", "!"},    {" ,", ","},
        {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},  {" do not", " don't"},
        {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto& [from, to] : kRules) s = replace_every(std::move(s), from, to);
    return s;
  }
  std::string prefix_;
  bool cleanup_;
};

// <0xE4><0xB8><0xAD> -> the bytes E4 B8 AD.
class ByteFallback : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string bytes;
    for (std::string& t : tokens) {
      if (int b = byte_of(t); b >= 0) {
        bytes.push_back(static_cast<char>(b));
        continue;
      }
      if (!bytes.empty()) out.push_back(std::move(bytes));
      bytes.clear();
      out.push_back(std::move(t));
    }
    if (!bytes.empty()) out.push_back(std::move(bytes));
    tokens = std::move(out);
  }

 private:
  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  // The byte a "<0xXX>" token stands for, or -1 (as Rust's u8::from_str_radix reads the two
  // characters, a leading '+' included).
  static int byte_of(const std::string& t) {
    if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
    if (t[3] == '+') return hex(t[4]);
    const int hi = hex(t[3]), lo = hex(t[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
  }
};

class Fuse : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string out;
    for (const std::string& t : tokens) out += t;
    tokens.assign(1, std::move(out));
  }
};

class Strip : public Decoder {
 public:
  Strip(char32_t content, int64_t start, int64_t stop) : start_(start), stop_(stop) {
    unicode::append_utf8(content_, content);
  }
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) {
      size_t begin = 0, end = t.size();
      for (int64_t k = 0; k < start_ && t.compare(begin, content_.size(), content_) == 0; ++k)
        begin += content_.size();
      for (int64_t k = 0; k < stop_ && end >= begin + content_.size() &&
                          t.compare(end - content_.size(), content_.size(), content_) == 0;
           ++k) {
        end -= content_.size();
      }
      t = t.substr(begin, end - begin);
    }
  }

 private:
  std::string content_;
  int64_t start_, stop_;
};

class Replace : public Decoder {
 public:
  Replace(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) t = replace_all(t, pattern_, content_);
  }

 private:
  Pattern pattern_;
  std::string content_;
};

// The end-of-word suffix ("</w>") becomes a space, or nothing on the last token.
class BpeDecoder : public Decoder {
 public:
  explicit BpeDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    if (suffix_.empty()) return;
    for (size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = replace_every(std::move(tokens[i]), suffix_, i + 1 == tokens.size() ? "" : " ");
    }
  }

 private:
  std::string suffix_;
};

size_t total_size(const std::vector<std::string>& tokens) {
  size_t n = 0;
  for (const auto& t : tokens) n += t.size();
  return n;
}

class Sequence : public Decoder {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    const size_t limit =
        max_grown_size(total_size(tokens) + tokens.size());  // + the spaces WordPiece adds
    for (const auto& p : parts_) {
      p->decode_chain(tokens);
      if (total_size(tokens) > limit) throw_too_long();
    }
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

constexpr const char* kSupported =
    "the decoders ByteLevel, Metaspace, WordPiece, ByteFallback, Fuse, Strip, Replace, BPEDecoder "
    "and Sequence";

}  // namespace

std::unique_ptr<Decoder> parse_decoder(const Json& json, const Where& where) {
  if (json.is_null()) return nullptr;
  const std::string type = type_of(json, where);
  if (type == "ByteLevel") return std::make_unique<ByteLevel>();
  if (type == "Metaspace") {
    bool strip_first = true;
    if (const Json* s = member(json, "prepend_scheme", where)) {
      strip_first = as_string(*s, where / "prepend_scheme") != "never";
    } else {
      strip_first = get_bool(json, "add_prefix_space", where, true);
    }
    return std::make_unique<Metaspace>(get_char(json, "replacement", where, U'\u2581'),
                                       strip_first);
  }
  if (type == "WordPiece") {
    return std::make_unique<WordPiece>(get_string(json, "prefix", where, "##"),
                                       get_bool(json, "cleanup", where, true));
  }
  if (type == "ByteFallback") return std::make_unique<ByteFallback>();
  if (type == "Fuse") return std::make_unique<Fuse>();
  if (type == "Strip") {
    return std::make_unique<Strip>(get_char(json, "content", where, U' '),
                                   get_int(json, "start", where, 0, INT32_MAX, 0),
                                   get_int(json, "stop", where, 0, INT32_MAX, 0));
  }
  if (type == "Replace") {
    return std::make_unique<Replace>(
        Pattern::from_spec(get_pattern(json, "pattern", where), where / "pattern"),
        get_string(json, "content", where));
  }
  if (type == "BPEDecoder")
    return std::make_unique<BpeDecoder>(get_string(json, "suffix", where, "</w>"));
  if (type == "Sequence") {
    const Json& list = get_array(json, "decoders", where);
    std::vector<std::unique_ptr<Decoder>> parts;
    for (size_t i = 0; i < list.size(); ++i) {
      if (auto p = parse_decoder(list[i], (where / "decoders")[i])) parts.push_back(std::move(p));
    }
    return std::make_unique<Sequence>(std::move(parts));
  }
  unsupported(where / "type", type, kSupported);
}

}  // namespace hftrain::tokenizer::hf
