// Byte-level tokenizer: ids 0..255 are the bytes of the UTF-8 text, followed by the special
// tokens (<|endoftext|> = 256, <|pad|> = 257 by default). Needs no training and round-trips
// every byte string exactly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace hftrain::tokenizer {

class ByteTokenizer : public Tokenizer {
 public:
  // Special tokens get ids 256, 257, ... in this order; the list must hold kEndOfTextToken and kPadToken.
  explicit ByteTokenizer(std::vector<std::string> specials = {kEndOfTextToken, kPadToken});

  std::vector<int32_t> encode(std::string_view text, bool allow_special = false) const override;
  std::string decode(std::span<const int32_t> ids) const override;
  int32_t vocab_size() const override { return 256 + static_cast<int32_t>(specials_.size()); }
  int32_t eot_id() const override { return eot_id_; }
  int32_t pad_id() const override { return pad_id_; }
  std::optional<int32_t> special_id(std::string_view content) const override;
  std::string fingerprint() const override;
  const std::vector<std::string>& specials() const { return specials_; }

 private:
  std::vector<std::string> specials_;
  int32_t eot_id_ = -1;
  int32_t pad_id_ = -1;
};

}  // namespace hftrain::tokenizer
