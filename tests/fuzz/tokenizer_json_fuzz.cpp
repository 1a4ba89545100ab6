// Fuzz target for tokenizer.json loading: the input is a whole tokenizer.json. Any
// util::DataError is a correct answer to bad input (from loading, and from encoding or decoding
// with a tokenizer whose regex or normalizer cannot handle a text); every other exception, crash,
// hang or sanitizer report is a bug. An accepted tokenizer must keep its promises on a few short
// texts: ids inside its vocabulary, end-of-text and padding ids inside it, decoding without
// surprises, and the tokenizer.json hftrain writes for it loading back with the same ids.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer_json.h"
#include "util/error.h"

namespace {

using hftrain::tokenizer::Tokenizer;

[[noreturn]] void broken(const std::string& what) {
  std::cerr << "tokenizer.json loader broke a promise: " << what << "\n";
  std::abort();
}

const char* const kProbes[] = {
    "Hello, world! It's 2024.",
    "  runs   of spaces\n\n\ttabs ",
    "Café naïve 中文 日本語 한국어 😀👍🏽",
    "<|endoftext|></s><s>[CLS] x [SEP][PAD]<unk>",
    "",
};

// The ids of every probe, every way ({-1} where encoding is refused).
std::vector<std::vector<int32_t>> encode_all(const Tokenizer& tok) {
  std::vector<std::vector<int32_t>> out;
  for (const char* probe : kProbes) {
    for (int mode = 0; mode < 3; ++mode) {
      std::vector<int32_t> ids;
      try {
        ids = mode == 2 ? tok.encode_with_special_tokens(probe) : tok.encode(probe, mode == 1);
      } catch (const hftrain::util::DataError&) {
        out.emplace_back(1, -1);  // refused: the same refusal must come back after the round trip
        continue;
      }
      for (int32_t id : ids) {
        if (id < 0 || id >= tok.vocab_size())
          broken("id " + std::to_string(id) + " outside the vocabulary");
      }
      try {
        tok.decode(ids);
        tok.decode_without_special(ids);
      } catch (const hftrain::util::DataError&) {
        // a decoder that grows text without bound is refused at decode time
      }
      out.push_back(std::move(ids));
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hftrain;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<Tokenizer> tok;
  try {
    tok = tokenizer::parse_tokenizer_json(text, "fuzz.json");
  } catch (const util::DataError&) {
    return 0;  // a clean rejection
  }
  if (tok->vocab_size() <= 0) broken("empty vocabulary accepted");
  if (tok->eot_id() < 0 || tok->eot_id() >= tok->vocab_size())
    broken("eot id outside the vocabulary");
  if (tok->pad_id() < 0 || tok->pad_id() >= tok->vocab_size())
    broken("pad id outside the vocabulary");
  const auto ids = encode_all(*tok);
  // What hftrain writes for the tokenizer loads again and encodes alike.
  std::unique_ptr<Tokenizer> again;
  try {
    again = tokenizer::parse_tokenizer_json(tokenizer::tokenizer_json_text(*tok), "fuzz-again.json");
  } catch (const util::DataError& e) {
    broken(std::string("re-written tokenizer.json rejected: ") + e.what());
  }
  // (Its end-of-text and padding choices may differ: a "padding" section is not written back.)
  if (encode_all(*again) != ids) broken("re-written tokenizer.json encodes differently");
  return 0;
}
