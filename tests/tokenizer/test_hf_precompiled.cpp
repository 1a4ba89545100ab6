// The Precompiled normalizer (SentencePiece's charsmap) on its own: base64 as tokenizers reads
// it, the shortest-prefix lookup per grapheme cluster, the clusters themselves, the T5 fixture's
// real charsmap, and malformed charsmaps (one DataError each). Expected texts come from
// `tokenizers` (normalizers.Precompiled with the same blob).
#include <catch2/catch.hpp>

#include <cstring>
#include <map>

#include "tokenizer/hf/hf_base64.h"
#include "tokenizer/hf/hf_grapheme.h"
#include "tokenizer/hf/hf_normalizer.h"
#include "tokenizer/hf/hf_precompiled.h"
#include "helpers.h"
#include "util/fs.h"

using namespace hftrain;
using namespace hftrain::tokenizer;

namespace {

const std::string kName = "p.json";
using Rules = std::vector<std::pair<std::string, std::string>>;

// The charsmap of `rules` (key -> replacement): a Darts-clone double array laid out simply, each
// node's children in a 256-unit block of its own (a child for byte b at base ^ b, the node's value
// at base ^ 0), then the NUL-ended replacements.
std::string charsmap(const Rules& rules) {
  struct Node {
    std::map<uint8_t, size_t> children;
    int64_t value = -1;
  };
  std::vector<Node> nodes(1);
  std::string replacements;
  for (const auto& [key, replacement] : rules) {
    size_t n = 0;
    for (char c : key) {
      const auto b = static_cast<uint8_t>(c);
      if (!nodes[n].children.count(b)) {
        nodes.emplace_back();
        nodes[n].children[b] = nodes.size() - 1;
      }
      n = nodes[n].children[b];
    }
    nodes[n].value = static_cast<int64_t>(replacements.size());
    replacements += replacement + '\0';
  }
  std::vector<uint32_t> units(256 * (nodes.size() + 1), 0);
  std::vector<size_t> pos(nodes.size(), 0);
  for (size_t n = 0; n < nodes.size(); ++n) {  // parents come before their children
    const size_t base = 256 * (n + 1);
    units[pos[n]] |= static_cast<uint32_t>((pos[n] ^ base) << 10);
    if (nodes[n].value >= 0) {
      units[pos[n]] |= 1u << 8;
      units[base] = (1u << 31) | static_cast<uint32_t>(nodes[n].value);
    }
    for (const auto& [b, child] : nodes[n].children) {
      pos[child] = base ^ b;
      units[pos[child]] = b;
    }
  }
  std::string blob(4 + 4 * units.size(), '\0');
  const auto size = static_cast<uint32_t>(4 * units.size());
  std::memcpy(blob.data(), &size, 4);  // little-endian machines only, as the tests run
  std::memcpy(blob.data() + 4, units.data(), 4 * units.size());
  return blob + replacements;
}

std::string base64(const std::string& bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = 0;
    for (size_t k = 0; k < 3; ++k)
      v = (v << 8) | (i + k < bytes.size() ? static_cast<uint8_t>(bytes[i + k]) : 0);
    const size_t chars = std::min<size_t>(4, (bytes.size() - i) * 4 / 3 + 1);
    for (size_t k = 0; k < 4; ++k) out += k < chars ? kAlphabet[(v >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

std::unique_ptr<hf::Normalizer> precompiled(const std::string& blob_base64) {
  return hf::parse_normalizer(
      hf::Json::parse(R"({"type": "Precompiled", "precompiled_charsmap": ")" + blob_base64 + "\"}"),
      hf::Where{&kName, "normalizer"});
}

std::string normalize(const hf::Normalizer& n, std::string text) {
  n.normalize(text);
  return text;
}

// The lengths of the grapheme clusters of `text`.
std::vector<size_t> clusters(std::string_view text) {
  std::vector<size_t> out;
  for (size_t begin = 0; begin < text.size();) {
    const size_t end = hf::grapheme_end(text, begin);
    out.push_back(end - begin);
    begin = end;
  }
  return out;
}

const Rules kRules = {
    {"q", "k"},      {"e\u0301", "\u00e9"}, {"\u212b", "\u00c5"}, {"\u212b\u0301", "\u01fa"},
    {"\r", " "},     {"\n", " "},           {"\ufb01", "fi"},     {"\u200b", ""},
    {"\u3000", "  "}};

}  // namespace

TEST_CASE("Precompiled tokenizer normalizer: base64 as tokenizers reads it", "[data][hf]") {
  std::string why;
  CHECK(hf::decode_base64("QUJD", why) == "ABC");
  CHECK(hf::decode_base64("QUI=", why) == "AB");
  CHECK(hf::decode_base64("QUI", why) == "AB");  // padding may be left out
  CHECK(hf::decode_base64("QQ==", why) == "A");
  CHECK(hf::decode_base64("QQ=", why) == "A");
  CHECK(hf::decode_base64("", why) == "");
  CHECK(base64("AB") == "QUI=");
  for (const char* bad :
       {"QUJD=", "QUI==", "QQ===", "Q", "QUJDR", "QR==", "QU I=", "QU-I", "=QUI"}) {
    INFO(bad);
    CHECK_FALSE(hf::decode_base64(bad, why));
  }
}

TEST_CASE("Precompiled tokenizer normalizer: the shortest key per grapheme cluster under 6 bytes",
          "[data][hf]") {
  auto n = precompiled(base64(charsmap(kRules)));
  CHECK(normalize(*n, "q") == "k");
  CHECK(normalize(*n, "q\u0301") == "k");  // one cluster of 3 bytes: the accent goes
  CHECK(normalize(*n, "q\u0301\u0301\u0301") == "k\u0301\u0301\u0301");  // 7 bytes: per character
  CHECK(normalize(*n, "e\u0301") == "\u00e9");
  CHECK(normalize(*n, "ee\u0301") == "e\u00e9");
  CHECK(normalize(*n, "e\u0301\u0301") == "\u00e9");
  CHECK(normalize(*n, "\u212b\u0301") == "\u00c5");  // the shorter key wins
  CHECK(normalize(*n, "\r\n") == " ");               // CR LF is one cluster
  CHECK(normalize(*n, "a\r\nb") == "a b");
  CHECK(normalize(*n, "\r\r\n") == "  ");
  CHECK(normalize(*n, "\ufb01\u0301") == "fi");
  CHECK(normalize(*n, "zero\u200bwidth") == "zerowidth");
  CHECK(normalize(*n, "\u3000x") == "  x");
  CHECK(normalize(*n, std::string("\0q", 2)) == std::string("\0k", 2));  // NUL ends a lookup
  CHECK(normalize(*n, "plain text") == "plain text");
  CHECK(normalize(*n, "").empty());
}

TEST_CASE("Precompiled tokenizer normalizer: extended grapheme clusters (UAX #29)", "[data][hf]") {
  using L = std::vector<size_t>;
  CHECK(clusters("\r\n") == L{2});
  CHECK(clusters("\n\r") == L{1, 1});
  CHECK(clusters("a\u0301\u0302b") == L{5, 1});
  CHECK(clusters("\x01\u0301") == L{1, 2});                // nothing extends a control
  CHECK(clusters("\u1100\u1161\u11a8") == L{9});           // Hangul L V T
  CHECK(clusters("\uac00\u11a8\u1100") == L{6, 3});        // LV T | L
  CHECK(clusters("\U0001f469\u200d\U0001f4bb") == L{11});  // emoji ZWJ sequence
  CHECK(clusters("a\u200d\U0001f4bb") == L{4, 4});         // ZWJ joins emoji only after an emoji
  CHECK(clusters("\U0001f1fa\U0001f1f3\U0001f1e9") == L{8, 4});  // flags: regional indicator pairs
  CHECK(clusters("\u0600a") == L{3});                            // Prepend
  CHECK(clusters("a\u0903") == L{4});                            // SpacingMark
  CHECK(clusters("\u0915\u094d\u0937") == L{9});                 // Indic conjunct (GB9c)
  CHECK(clusters("\u0915\u0937") == L{3, 3});
  CHECK(clusters("\u00a9\ufe0f") == L{5});
}

TEST_CASE("Precompiled tokenizer normalizer: SentencePiece's nmt_nfkc charsmap of the T5 fixture",
          "[data][hf]") {
  const auto doc = hf::Json::parse(util::read_file<util::DataError>(
      std::string(HFTRAIN_TEST_FIXTURES_DIR) + "/data/hf_t5_tokenizer.json", "fixture"));
  auto n = hf::parse_normalizer(doc.at("normalizer"), hf::Where{&kName, "normalizer"});
  CHECK(normalize(*n, "\uff21\uff42\uff43\uff11") == "Abc1");  // full width
  CHECK(normalize(*n, "\uff21\u0301") == "A");  // one cluster: the accent goes with the key
  CHECK(normalize(*n, "e\u0301") == "\u00e9");  // composed
  CHECK(normalize(*n, "\u212b\u0301") == "\u00c5");
  CHECK(normalize(*n, "\u337f \u2460 \ufb01") == "\u682a\u5f0f\u4f1a\u793e 1 fi");
  CHECK(normalize(*n, "a\r\nb\tc\x01") == "a b c");
  CHECK(normalize(*n, "x\u0301\u0302") == "x\u0301\u0302");
}

TEST_CASE("Precompiled tokenizer normalizer: malformed charsmaps are one DataError each",
          "[data][hf]") {
  auto error = [](const std::string& json) {
    return test::data_error([&] {
      hf::parse_normalizer(hf::Json::parse(json), hf::Where{&kName, "normalizer"});
    });
  };
  auto blob_error = [&](const std::string& blob) {
    return error(R"({"type": "Precompiled", "precompiled_charsmap": ")" + base64(blob) + "\"}");
  };
  const std::string at = "p.json: normalizer.precompiled_charsmap ";
  CHECK_THAT(error(R"({"type": "Precompiled"})"), Catch::Contains(at + "is missing"));
  CHECK_THAT(error(R"({"type": "Precompiled", "precompiled_charsmap": 12})"),
             Catch::Contains(at + "is an integer, not a string"));
  CHECK_THAT(error(R"({"type": "Precompiled", "precompiled_charsmap": "AA@A"})"),
             Catch::Contains(at + "has a character that is not base64 at offset 2"));
  CHECK_THAT(error(R"({"type": "Precompiled", "precompiled_charsmap": "QUJD=="})"),
             Catch::Contains(at + "is not base64"));
  CHECK_THAT(error(R"({"type": "Precompiled", "precompiled_charsmap": "QR=="})"),
             Catch::Contains(at + "is not base64 (its last character has stray bits)"));
  CHECK_THAT(blob_error("abc"), Catch::Contains(at + "is too short"));
  CHECK_THAT(blob_error(std::string(4, '\0') + "abc"), Catch::Contains(at + "holds an empty trie"));
  CHECK_THAT(blob_error(std::string("\x10\0\0\0", 4) + "abcd"),
             Catch::Contains(at + "says its trie has 4 units, but only 1 follow"));
  const std::string good = charsmap({{"a", "b"}});
  CHECK_THAT(blob_error(good + "\xff"),
             Catch::Contains(at + "has replacement strings that are not UTF-8"));
  CHECK_THAT(blob_error(good + "\xed\xa0\x80"), Catch::Contains("not UTF-8"));  // a surrogate
  // One unit: the root's children would lie outside the trie.
  CHECK_THAT(blob_error(std::string("\x04\0\0\0\0\0\0\0", 8)),
             Catch::Contains(at + "has a trie node outside the trie"));
  // The value of "a" (the unit at 512) pointing past the replacements, or into a character.
  std::string past = good;
  const uint32_t far = (1u << 31) | 100;
  std::memcpy(past.data() + 4 + 4 * 512, &far, 4);
  CHECK_THAT(blob_error(past),
             Catch::Contains(at + "has a replacement offset that is not the start"));
  std::string inside = charsmap({{"a", "\u00e9"}});
  const uint32_t mid = (1u << 31) | 1;
  std::memcpy(inside.data() + 4 + 4 * 512, &mid, 4);
  CHECK_THAT(blob_error(inside), Catch::Contains("not the start of a character"));
  // The well-formed blob itself loads and works.
  CHECK(normalize(*precompiled(base64(good)), "banana") == "bbnbnb");
}
