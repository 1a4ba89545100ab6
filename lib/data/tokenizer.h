// The tokenizer interface the data stage needs: text to ids and back, plus the special tokens
// that packing and padding use. Implementations: ByteTokenizer (byte_tokenizer.h) and
// BpeTokenizer (bpe_tokenizer.h, Hugging Face tokenizer.json compatible).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hftrain::data {

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
  // kBpe: a Hugging Face tokenizer.json (byte-level BPE), written by hftrain or by `tokenizers`.
  std::string path;
};

// Builds the tokenizer the options name. Throws DataError for a missing or unusable file.
std::unique_ptr<Tokenizer> make_tokenizer(const TokenizerOptions& options);

}  // namespace hftrain::data
