// The decoders of tokenizer.json: how tokens become text again (ByteLevel, Metaspace, WordPiece,
// ByteFallback, Fuse, Strip, Replace, BPEDecoder, Sequence), each a step over the list of token
// strings as in `tokenizers`. One difference, on purpose: bytes that do not form valid UTF-8
// (a character cut between tokens) are kept as they are instead of becoming U+FFFD, so that text
// decoded token by token can be put together again.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/hf/hf_json.h"

namespace hftrain::tokenizer::hf {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

// nullptr for null (tokens are then joined with spaces). Throws DataError naming the JSON path for
// an unknown or unsupported type (CTC).
std::unique_ptr<Decoder> parse_decoder(const Json& json, const Where& where);

}  // namespace hftrain::tokenizer::hf
