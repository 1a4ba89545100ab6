// The Hugging Face tokenizer.json format for byte-level BPE: what hftrain writes loads in the
// Python `tokenizers` library (Tokenizer.from_file) and gives the same ids; a byte-level BPE
// tokenizer.json written by `tokenizers` (ByteLevel pre-tokenizer with the GPT-2 pattern, BPE
// model, no normalizer) loads here and gives the same ids.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "data/bpe_tokenizer.h"
#include "data/byte_tokenizer.h"

namespace hftrain::data {

// The JSON text of a tokenizer.json for `tokenizer`.
std::string tokenizer_json_text(const BpeTokenizer& tokenizer);
// Writes it crash-safely (util::atomic_write_file).
void save_tokenizer_json(const BpeTokenizer& tokenizer, const std::filesystem::path& path);

// The byte tokenizer as a BPE without merges (same ids), e.g. to export it.
BpeModel byte_tokenizer_model(const ByteTokenizer& tokenizer);

// Parses a tokenizer.json. Throws DataError naming the file for malformed JSON and for features
// hftrain does not implement (a normalizer, another pre-tokenizer, a non-BPE model, dropout,
// unk tokens, continuing-subword prefixes), with the JSON path of the offending key.
std::unique_ptr<BpeTokenizer> load_tokenizer_json(const std::filesystem::path& path);
std::unique_ptr<BpeTokenizer> parse_tokenizer_json(const std::string& text, const std::string& name);

}  // namespace hftrain::data
