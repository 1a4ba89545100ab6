// The byte tokenizer: exact round trips on any text, special tokens only when allowed.
#include <catch2/catch.hpp>

#include "tokenizer/byte_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "helpers.h"

using namespace hftrain;

TEST_CASE("byte tokenizer: ids are the UTF-8 bytes and decode(encode(x)) == x", "[data][tokenizer]") {
  tokenizer::ByteTokenizer tok;
  CHECK(tok.vocab_size() == 258);
  CHECK(tok.eot_id() == 256);
  CHECK(tok.pad_id() == 257);
  CHECK(tok.encode("é") == std::vector<int32_t>{0xC3, 0xA9});
  for (const auto& text : test::kMultilingual) {
    auto ids = tok.encode(text);
    CHECK(ids.size() == text.size());
    CHECK(tok.decode(ids) == text);
  }
}

TEST_CASE("byte tokenizer: special-token text is plain text unless allowed", "[data][tokenizer]") {
  tokenizer::ByteTokenizer tok;
  const std::string text = "a<|endoftext|>b<|pad|>";
  CHECK(tok.encode(text).size() == text.size());
  CHECK(tok.encode(text, true) == std::vector<int32_t>{'a', 256, 'b', 257});
  std::vector<int32_t> ids{'h', 'i', 256};
  CHECK(tok.decode(ids) == "hi<|endoftext|>");
  std::vector<int32_t> bad{300};
  CHECK_THROWS_AS(tok.decode(bad), util::DataError);
  CHECK(tok.fingerprint() !=
        tokenizer::ByteTokenizer({tokenizer::kEndOfTextToken, tokenizer::kPadToken, "<|im_start|>"}).fingerprint());
}

TEST_CASE("make_tokenizer builds the byte tokenizer and asks for a path for BPE", "[data][tokenizer]") {
  auto tok = tokenizer::make_tokenizer({});
  CHECK(tok->vocab_size() == 258);
  CHECK_THROWS_AS(tokenizer::make_tokenizer({tokenizer::TokenizerKind::kBpe, "", "", ""}), util::ConfigError);
  CHECK_THROWS_AS(tokenizer::make_tokenizer({tokenizer::TokenizerKind::kBpe, "/nonexistent/tokenizer.json", "", ""}),
                  util::DataError);
}
