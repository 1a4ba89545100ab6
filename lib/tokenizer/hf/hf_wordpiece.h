// WordPiece (BERT) and WordLevel models of tokenizer.json. WordPiece: the longest vocabulary
// token at the start of the piece, then the longest "##"-prefixed token after it, and so on; a
// piece that cannot be covered, or is longer than max_input_chars_per_word characters, is one unk
// token. WordLevel: the whole piece is a token, or unk.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tokenizer/hf/hf_model.h"

namespace hftrain::tokenizer::hf {

class WordPiece : public Model {
 public:
  // Throws DataError (via `where`) when the unk token is not in the vocabulary.
  WordPiece(Vocab vocab, const std::string& unk_token, std::string prefix, int64_t max_chars,
            const Where& where);
  void tokenize(const std::string& piece, std::vector<int32_t>& out) const override;
  const Vocab& vocab() const override { return vocab_; }
  std::string kind() const override { return "WordPiece"; }

 private:
  Vocab vocab_;
  int32_t unk_id_;
  std::string prefix_;
  int64_t max_chars_;
  size_t max_token_bytes_ = 0;
};

class WordLevel : public Model {
 public:
  WordLevel(Vocab vocab, const std::string& unk_token, const Where& where);
  void tokenize(const std::string& piece, std::vector<int32_t>& out) const override;
  const Vocab& vocab() const override { return vocab_; }
  std::string kind() const override { return "WordLevel"; }

 private:
  Vocab vocab_;
  int32_t unk_id_;
};

std::unique_ptr<Model> parse_wordpiece(const Json& json, const Where& where);
std::unique_ptr<Model> parse_wordlevel(const Json& json, const Where& where);

}  // namespace hftrain::tokenizer::hf
