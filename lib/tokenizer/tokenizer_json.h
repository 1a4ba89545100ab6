// The Hugging Face tokenizer.json format. What hftrain writes (byte-level BPE) loads in the Python
// `tokenizers` library (Tokenizer.from_file) and gives the same ids. Files written by `tokenizers`
// load here and give its ids: byte-level BPE (GPT-2; Llama-3 / Qwen2 with a Split regex) as the
// fast BpeTokenizer, everything else hftrain supports (SentencePiece-style BPE with byte
// fallback as in Llama-2 and Mistral, WordPiece as in BERT, WordLevel; normalizers,
// pre-tokenizers, post-processors, decoders, added tokens) as HfTokenizer.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/byte_tokenizer.h"
#include "tokenizer/tokenizer_specials.h"

namespace hftrain::tokenizer {

// The JSON text of a tokenizer.json for `tokenizer`.
std::string tokenizer_json_text(const BpeTokenizer& tokenizer);
// Writes it crash-safely (util::atomic_write_file).
void save_tokenizer_json(const BpeTokenizer& tokenizer, const std::filesystem::path& path);

// The byte tokenizer as a BPE without merges (same ids), e.g. to export it.
BpeModel byte_tokenizer_model(const ByteTokenizer& tokenizer);

// The tokenizer.json text of any tokenizer that has one: a BpeTokenizer as above, an HfTokenizer
// as it was loaded, the byte tokenizer as its merge-free BPE. Throws UsageError otherwise.
std::string tokenizer_json_text(const Tokenizer& tokenizer);
void save_tokenizer_json(const Tokenizer& tokenizer, const std::filesystem::path& path);

// Parses a tokenizer.json (BpeTokenizer when it is byte-level BPE, else HfTokenizer). Throws
// DataError naming the file for malformed JSON and for features hftrain does not implement
// (BPE dropout, a component type it does not know, ...), with the JSON path of the
// offending key, and when no end-of-text token can be found (tokenizer_specials.h). load reads
// the tokenizer_config.json next to the file, if there is one, for its eos and pad tokens.
std::unique_ptr<Tokenizer> load_tokenizer_json(const std::filesystem::path& path, SpecialTokenChoice choice = {});
std::unique_ptr<Tokenizer> parse_tokenizer_json(const std::string& text, const std::string& name,
                                                const SpecialTokenChoice& choice = {});

}  // namespace hftrain::tokenizer
