// The Split pre-tokenizer's regex engine (PCRE2): pieces in order that concatenate back, the
// gaps between matches kept as pieces, empty matches stepped over, bad patterns reported.
#include <catch2/catch.hpp>

#include "tokenizer/regex_split.h"
#include "util/error.h"

using namespace hftrain;

namespace {

std::string joined(const std::vector<std::string_view>& pieces) {
  std::string out;
  for (auto p : pieces) out += p;
  return out;
}

}  // namespace

TEST_CASE("a Llama-3 style pattern splits words, numbers in threes and whitespace", "[data][regex]") {
  tokenizer::RegexSplitter s(
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*)"
      R"(|\s*[\r\n]+|\s+(?!\S)|\s+)",
      "test");
  const std::string text = "Héllo wörld's 12345 你好  👋\n\nend";
  const auto pieces = s.split(text);
  CHECK(joined(pieces) == text);
  REQUIRE(pieces.size() >= 8);
  CHECK(pieces[0] == "Héllo");
  CHECK(pieces[1] == " wörld");
  CHECK(pieces[2] == "'s");
  CHECK(pieces[4] == "123");  // \p{N}{1,3}
  CHECK(pieces[5] == "45");
}

TEST_CASE("text the pattern does not match is kept as its own piece", "[data][regex]") {
  tokenizer::RegexSplitter digits(R"(\d+)", "test");
  const auto pieces = digits.split("ab12cd345");
  REQUIRE(pieces.size() == 4);
  CHECK(pieces[0] == "ab");
  CHECK(pieces[1] == "12");
  CHECK(pieces[2] == "cd");
  CHECK(pieces[3] == "345");
  tokenizer::RegexSplitter empty_matches(R"(x*)", "test");
  CHECK(joined(empty_matches.split("aaxxbé")) == "aaxxbé");
  CHECK(digits.split("").empty());
}

TEST_CASE("a pattern PCRE2 rejects is a DataError naming the source", "[data][regex]") {
  CHECK_THROWS_WITH(tokenizer::RegexSplitter("(unclosed", "tok.json"), Catch::Matchers::Contains("tok.json"));
  CHECK_THROWS_AS(tokenizer::RegexSplitter("a{2,1}", "tok.json"), util::DataError);
}
