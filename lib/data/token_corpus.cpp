#include "data/token_corpus.h"

#include <algorithm>
#include <string>

#include "util/error.h"

namespace hftrain::data {

TokenCorpus::TokenCorpus(std::vector<uint32_t> tokens, std::vector<uint8_t> train_mask,
                         std::vector<uint64_t> doc_starts, std::string name)
    : owned_tokens_(std::move(tokens)),
      owned_mask_(std::move(train_mask)),
      owned_starts_(std::move(doc_starts)),
      name_(std::move(name)) {
  tokens_ = owned_tokens_.data();
  width_ = 4;
  num_tokens_ = owned_tokens_.size();
  train_mask_ = owned_mask_.empty() ? nullptr : owned_mask_.data();
  if (owned_starts_.empty()) owned_starts_ = {0, num_tokens_};
  doc_starts_ = owned_starts_;
}

TokenCorpus::TokenCorpus(std::shared_ptr<const MappedFile> owner, const void* tokens, int token_width,
                         uint64_t num_tokens, const uint8_t* train_mask, std::span<const uint64_t> doc_starts,
                         std::string name)
    : owner_(std::move(owner)),
      tokens_(tokens),
      width_(token_width),
      num_tokens_(num_tokens),
      train_mask_(train_mask),
      name_(std::move(name)) {
  if (doc_starts.empty()) {
    owned_starts_ = {0, num_tokens_};
    doc_starts_ = owned_starts_;
  } else {
    doc_starts_ = doc_starts;
  }
}

void TokenCorpus::copy(uint64_t begin, uint64_t end, int64_t* tokens, uint8_t* train) const {
  const uint64_t n = end - begin;
  if (width_ == 2) {
    const auto* src = static_cast<const uint16_t*>(tokens_) + begin;
    for (uint64_t i = 0; i < n; ++i) tokens[i] = src[i];
  } else {
    const auto* src = static_cast<const uint32_t*>(tokens_) + begin;
    for (uint64_t i = 0; i < n; ++i) tokens[i] = src[i];
  }
  if (id_limit_ != 0) {
    for (uint64_t i = 0; i < n; ++i) {
      if (tokens[i] >= id_limit_) {
        throw util::DataError(name_ + ": token " + std::to_string(begin + i) + " has id " + std::to_string(tokens[i]) +
                                  ", outside the tokenizer's vocabulary of " + std::to_string(id_limit_),
                              "the file was made with another tokenizer, or its dtype is wrong");
      }
    }
  }
  if (train_mask_ == nullptr) {
    std::fill(train, train + n, uint8_t{1});
  } else {
    std::copy(train_mask_ + begin, train_mask_ + end, train);
  }
}

uint32_t TokenCorpus::max_token() const {
  uint32_t best = 0;
  for (uint64_t i = 0; i < num_tokens_; ++i) best = std::max(best, token(i));
  return best;
}

}  // namespace hftrain::data
