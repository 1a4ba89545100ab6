// The Unigram model of tokenizer.json (SentencePiece's unigram language model: T5, ALBERT, XLM-R,
// mT5, ...), as the `tokenizers` library runs it: "vocab" is [[piece, score], ...] (the id is the
// position), a piece is split into the vocabulary pieces whose scores have the highest sum
// (Viterbi over the lattice of pieces starting at each character), and a character that no
// one-character piece covers is unknown, scored as the lowest score minus 10. Ties go to the path
// found first: the one whose last piece starts earliest. Adjacent unknown characters make one
// unk token (fused), or with byte_fallback their UTF-8 bytes as <0xXX> pieces when the vocabulary
// has them all.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/hf/hf_model.h"
#include "tokenizer/hf/hf_piece_trie.h"

namespace hftrain::tokenizer::hf {

class Unigram : public Model {
 public:
  // pieces[id] with scores[id]. Throws DataError (via `where`) for an unk_id outside the pieces.
  Unigram(std::vector<std::string> pieces, std::vector<double> scores,
          std::optional<int32_t> unk_id, bool byte_fallback, const Where& where);

  // Throws DataError when the piece has a character no vocabulary piece covers and the model has
  // no unk_id (as `tokenizers` fails on such text).
  void tokenize(const std::string& piece, std::vector<int32_t>& out) const override;
  const Vocab& vocab() const override { return vocab_; }
  std::string kind() const override { return "Unigram"; }

 private:
  // The [begin, end) byte ranges of the best segmentation, unknown runs fused into one range.
  std::vector<std::pair<size_t, size_t>> segment(const std::string& piece) const;

  Vocab vocab_;
  std::vector<double> scores_;  // by id
  std::optional<int32_t> unk_id_;
  double unk_score_;
  bool byte_fallback_;
  PieceTrie trie_;
  int32_t byte_ids_[256];  // <0xXX> pieces; -1 where missing
  std::string file_;       // for the error about a missing unk_id
};

std::unique_ptr<Model> parse_unigram(const Json& json, const Where& where);

}  // namespace hftrain::tokenizer::hf
