// The normalizers of Hugging Face tokenizer.json files: NFD, NFKD, NFC, NFKC, Lowercase,
// StripAccents, Strip, Replace, Prepend, Nmt, ByteLevel, BertNormalizer, Precompiled
// (SentencePiece's charsmap, hf_precompiled.h) and Sequence, applied to a text as the
// `tokenizers` library applies them (hftrain needs no alignments, so they work on plain strings).
#pragma once

#include <memory>
#include <string>

#include "tokenizer/hf/hf_json.h"

namespace hftrain::tokenizer::hf {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // `text` is valid UTF-8 and stays so.
  virtual void normalize(std::string& text) const = 0;
};

// The normalizer a tokenizer.json "normalizer" value describes; nullptr for null. Throws
// DataError naming the JSON path for an unknown type, an unsupported option or a malformed value
// (a Precompiled charsmap that is not base64 or not a SentencePiece trie).
std::unique_ptr<Normalizer> parse_normalizer(const Json& json, const Where& where);

}  // namespace hftrain::tokenizer::hf
