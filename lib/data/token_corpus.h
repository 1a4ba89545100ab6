// A tokenized corpus: every document's tokens, each followed by the end-of-text token, as one
// stream; a loss flag per token (absent when every token is trained on); and the offsets where
// documents start. Backed by memory (just tokenized) or by a memory map (a token cache file or
// a pre-tokenized shard), so that samplers and packers read it without copying it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "data/mapped_file.h"

namespace hftrain::data {

class TokenCorpus {
 public:
  // In-memory corpus. `doc_starts` has one entry per document plus the end (num_tokens);
  // `train_mask` is empty (all tokens trained on) or one 0/1 byte per token.
  TokenCorpus(std::vector<uint32_t> tokens, std::vector<uint8_t> train_mask, std::vector<uint64_t> doc_starts,
              std::string name);
  // A view into a mapped file; `owner` keeps the mapping alive. `tokens` is uint16 or uint32
  // (token_width 2 or 4); `train_mask` and `doc_starts` may point into the same mapping.
  TokenCorpus(std::shared_ptr<const MappedFile> owner, const void* tokens, int token_width, uint64_t num_tokens,
              const uint8_t* train_mask, std::span<const uint64_t> doc_starts, std::string name);

  uint64_t num_tokens() const { return num_tokens_; }
  uint64_t num_docs() const { return doc_starts_.size() - 1; }
  std::span<const uint64_t> doc_starts() const { return doc_starts_; }
  bool has_mask() const { return train_mask_ != nullptr; }
  int token_width() const { return width_; }
  const std::string& name() const { return name_; }

  uint32_t token(uint64_t i) const {
    return width_ == 2 ? static_cast<const uint16_t*>(tokens_)[i] : static_cast<const uint32_t*>(tokens_)[i];
  }
  bool trains(uint64_t i) const { return train_mask_ == nullptr || train_mask_[i] != 0; }

  // Copies tokens [begin, end) to `tokens` and their loss flags (0/1) to `train`. Throws DataError
  // for a token at or above the id limit, when one is set.
  void copy(uint64_t begin, uint64_t end, int64_t* tokens, uint8_t* train) const;
  // Ids at or above `limit` are refused as they are read (a shard far larger than memory is not
  // scanned up front).
  void set_id_limit(uint32_t limit) { id_limit_ = limit; }
  // The largest token id (scanned once, for vocabulary checks).
  uint32_t max_token() const;

 private:
  std::shared_ptr<const MappedFile> owner_;
  std::vector<uint32_t> owned_tokens_;
  std::vector<uint8_t> owned_mask_;
  std::vector<uint64_t> owned_starts_;
  const void* tokens_ = nullptr;
  int width_ = 4;
  uint64_t num_tokens_ = 0;
  const uint8_t* train_mask_ = nullptr;
  uint32_t id_limit_ = 0;  // 0: none
  std::span<const uint64_t> doc_starts_;
  std::string name_;
};

}  // namespace hftrain::data
