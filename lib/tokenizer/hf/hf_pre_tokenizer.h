// The pre-tokenizers of Hugging Face tokenizer.json files: ByteLevel, Split, Metaspace,
// Whitespace, WhitespaceSplit, BertPreTokenizer, Punctuation, Digits, CharDelimiterSplit and
// Sequence. Each cuts the pieces of a normalized text into finer pieces (and may rewrite them:
// ByteLevel maps bytes to its printable characters, Metaspace spaces to '▁'); the model then
// tokenizes every piece on its own.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/hf/hf_json.h"

namespace hftrain::tokenizer::hf {

struct Piece {
  std::string text;
  // Whether the piece begins the whole input (offset 0): Metaspace's prepend_scheme "first"
  // prepends its '▁' there only, not after an added token.
  bool at_start = false;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces `pieces` by their finer pieces, none empty.
  virtual void pre_tokenize(std::vector<Piece>& pieces) const = 0;
};

// The pre-tokenizer a tokenizer.json "pre_tokenizer" value describes; nullptr for null. Throws
// DataError naming the JSON path for an unknown or unsupported type (UnicodeScripts, FixedLength)
// or option.
std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const Json& json, const Where& where);

}  // namespace hftrain::tokenizer::hf
