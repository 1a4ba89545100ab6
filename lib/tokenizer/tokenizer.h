// The tokenizer interface the data stage needs: text to ids and back, plus the special tokens
// that packing and padding use. Implementations: ByteTokenizer (byte_tokenizer.h), BpeTokenizer
// (bpe_tokenizer.h: byte-level BPE, Hugging Face tokenizer.json compatible) and HfTokenizer
// (hf_tokenizer.h: any other supported tokenizer.json: SentencePiece-style BPE, WordPiece, ...).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hftrain::tokenizer {

inline constexpr const char* kEndOfTextToken = "<|endoftext|>";
inline constexpr const char* kPadToken = "<|pad|>";

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Encodes `text`. With allow_special, special-token strings in the text ("<|endoftext|>")
  // become their ids, as Hugging Face tokenizers do; without it they are ordinary text, so that
  // data cannot inject control tokens.
  virtual std::vector<int32_t> encode(std::string_view text, bool allow_special = false) const = 0;
  // Decodes ids; special tokens decode to their text. Bytes that do not form valid UTF-8 on
  // their own (a cut multi-byte character) are kept as they are.
  virtual std::string decode(std::span<const int32_t> ids) const = 0;
  // As Hugging Face's encode(text, add_special_tokens=True): encode(text, true) plus what the
  // tokenizer's post-processor puts around a sequence (a BOS token; [CLS] ... [SEP]).
  virtual std::vector<int32_t> encode_with_special_tokens(std::string_view text) const { return encode(text, true); }
  // As Hugging Face's decode(ids, skip_special_tokens=True). The default leaves out eot and pad.
  virtual std::string decode_without_special(std::span<const int32_t> ids) const;

  virtual int32_t vocab_size() const = 0;
  virtual int32_t eot_id() const = 0;  // ends every document
  virtual int32_t pad_id() const = 0;  // fills padded batches (never a target)
  // The id of a special (added) token, if the vocabulary has it.
  virtual std::optional<int32_t> special_id(std::string_view content) const = 0;
  // Changes whenever the ids of any text would change; part of the token cache's key.
  virtual std::string fingerprint() const = 0;
};

enum class TokenizerKind { kByte, kBpe };

struct TokenizerOptions {
  TokenizerKind kind = TokenizerKind::kByte;
  // kBpe: a Hugging Face tokenizer.json, written by hftrain or by `tokenizers` (byte-level BPE,
  // SentencePiece-style BPE, WordPiece, WordLevel; tokenizer_json.h).
  std::string path;
  // The tokens that end documents and fill padding; empty: the tokenizer's own (its
  // tokenizer_config.json, post-processor or a well-known name; tokenizer_specials.h).
  std::string eos_token;
  std::string pad_token;
};

// Builds the tokenizer the options name. Throws DataError for a missing or unusable file.
std::unique_ptr<Tokenizer> make_tokenizer(const TokenizerOptions& options);

}  // namespace hftrain::tokenizer
