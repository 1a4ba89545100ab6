#include "tokenizer/hf/hf_precompiled.h"

#include "tokenizer/hf/hf_base64.h"
#include "tokenizer/hf/hf_grapheme.h"
#include "tokenizer/hf/hf_split.h"
#include "tokenizer/unicode.h"

namespace hftrain::tokenizer::hf {
namespace {

// A Darts-clone unit: a node's label (bit 31 set for the units that hold values, so that no byte
// matches them), whether it has a value, the offset to its children; or a value.
bool has_leaf(uint32_t unit) {
  return ((unit >> 8) & 1) == 1;
}
uint32_t value(uint32_t unit) {
  return unit & ((1u << 31) - 1);
}
uint32_t label(uint32_t unit) {
  return unit & ((1u << 31) | 0xFF);
}
size_t offset(uint32_t unit) {
  return (unit >> 10) << ((unit & (1u << 9)) >> 6);
}

uint32_t read_u32(std::string_view blob, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i)
    v = (v << 8) | static_cast<uint8_t>(blob[at + static_cast<size_t>(i)]);
  return v;
}

// As Rust's String::from_utf8: no overlong forms, surrogates or code points past U+10FFFF.
bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    const size_t n = c < 0x80             ? 1
                     : (c & 0xE0) == 0xC0 ? 2
                     : (c & 0xF0) == 0xE0 ? 3
                     : (c & 0xF8) == 0xF0 ? 4
                                          : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : c & (0xFFu >> (n + 1));
    for (size_t k = 1; k < n; ++k) {
      const auto cc = static_cast<uint8_t>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

class Precompiled : public Normalizer {
 public:
  explicit Precompiled(CharsMap map) : map_(std::move(map)) {}
  void normalize(std::string& text) const override { text = map_.normalize(text); }

 private:
  CharsMap map_;
};

}  // namespace

CharsMap::CharsMap(std::string_view blob, const Where& where) {
  const char* hint = "is the tokenizer.json damaged? The charsmap comes from a SentencePiece model";
  if (blob.size() < 4) fail(where, "is too short for a SentencePiece charsmap", hint);
  // The crate reads trie_size / 4 units and takes the rest, whatever trie_size % 4 is.
  const size_t units = read_u32(blob, 0) / 4;
  if (units == 0) fail(where, "holds an empty trie", hint);
  if (units > (blob.size() - 4) / 4) {
    fail(where,
         "says its trie has " + std::to_string(units) + " units, but only " +
             std::to_string((blob.size() - 4) / 4) + " follow",
         hint);
  }
  units_.resize(units);
  for (size_t i = 0; i < units; ++i) units_[i] = read_u32(blob, 4 + 4 * i);
  replacements_ = std::string(blob.substr(4 + 4 * units));
  if (!valid_utf8(replacements_)) fail(where, "has replacement strings that are not UTF-8", hint);
  check_trie(where);
}

// Walks every node the trie can reach, as transform() would on some input: every child a byte
// can lead to must lie inside the trie, every value must start a character of the replacements.
void CharsMap::check_trie(const Where& where) const {
  const char* hint = "is the tokenizer.json damaged? The charsmap comes from a SentencePiece model";
  std::vector<bool> seen(units_.size(), false);
  std::vector<size_t> to_visit{offset(units_[0])};  // the children's base of each node to visit
  while (!to_visit.empty()) {
    const size_t base = to_visit.back();
    to_visit.pop_back();
    if ((base | 0xFF) >= units_.size()) fail(where, "has a trie node outside the trie", hint);
    for (uint32_t c = 1; c < 256; ++c) {
      const size_t pos = base ^ c;
      const uint32_t unit = units_[pos];
      if (label(unit) != c || seen[pos]) continue;
      seen[pos] = true;
      const size_t child = pos ^ offset(unit);
      if (has_leaf(unit)) {
        if (child >= units_.size()) fail(where, "has a trie value outside the trie", hint);
        const size_t at = value(units_[child]);
        if (at > replacements_.size() ||
            (at < replacements_.size() &&
             (static_cast<uint8_t>(replacements_[at]) & 0xC0) == 0x80)) {
          fail(where, "has a replacement offset that is not the start of a character", hint);
        }
      }
      to_visit.push_back(child);
    }
  }
}

std::optional<std::string_view> CharsMap::transform(std::string_view chunk) const {
  size_t pos = offset(units_[0]);
  for (char ch : chunk) {
    const auto c = static_cast<uint8_t>(ch);
    if (c == 0) break;
    pos ^= c;
    // check_trie keeps these in bounds; the checks only guard against a mistake there.
    if (pos >= units_.size() || label(units_[pos]) != c) return std::nullopt;
    const bool leaf = has_leaf(units_[pos]);
    pos ^= offset(units_[pos]);
    if (leaf) {
      if (pos >= units_.size()) return std::nullopt;
      const size_t at = value(units_[pos]);
      if (at > replacements_.size()) return std::nullopt;
      const size_t end = replacements_.find('\0', at);
      return std::string_view(replacements_).substr(at, end == std::string::npos ? end : end - at);
    }
  }
  return std::nullopt;
}

std::string CharsMap::normalize(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  const size_t limit = max_grown_size(text.size());
  for (size_t begin = 0; begin < text.size();) {
    const size_t end = grapheme_end(text, begin);
    const std::string_view cluster = text.substr(begin, end - begin);
    begin = end;
    std::optional<std::string_view> whole;
    if (cluster.size() < 6) whole = transform(cluster);
    if (whole) {
      out += *whole;
    } else {
      for (size_t i = 0; i < cluster.size();) {
        size_t len = 1;
        unicode::decode(cluster, i, len);
        const std::string_view ch = cluster.substr(i, len);
        out += transform(ch).value_or(ch);
        i += len;
      }
    }
    if (out.size() > limit) throw_too_long();
  }
  return out;
}

std::unique_ptr<Normalizer> parse_precompiled(const Json& json, const Where& where) {
  const Where at = where / "precompiled_charsmap";
  std::string why;
  auto blob = decode_base64(get_string(json, "precompiled_charsmap", where), why);
  if (!blob) fail(at, why);
  return std::make_unique<Precompiled>(CharsMap(*blob, at));
}

}  // namespace hftrain::tokenizer::hf
