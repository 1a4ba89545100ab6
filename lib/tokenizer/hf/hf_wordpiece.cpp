#include "tokenizer/hf/hf_wordpiece.h"

#include <algorithm>
#include <cstdint>

#include "tokenizer/unicode.h"

namespace hftrain::tokenizer::hf {
namespace {

int32_t unk_id(const Vocab& vocab, const std::string& unk_token, const Where& where) {
  auto id = vocab.find(unk_token);
  if (!id) {
    fail(where / "unk_token", "names " + shown(unk_token) + ", which is not in model.vocab",
         "the model needs its unknown token in its vocabulary");
  }
  return *id;
}

}  // namespace

WordPiece::WordPiece(Vocab vocab, const std::string& unk_token, std::string prefix,
                     int64_t max_chars, const Where& where)
    : vocab_(std::move(vocab)),
      unk_id_(unk_id(vocab_, unk_token, where)),
      prefix_(std::move(prefix)),
      max_chars_(max_chars) {
  for (const auto& [token, id] : vocab_.ids)
    max_token_bytes_ = std::max(max_token_bytes_, token.size());
}

void WordPiece::tokenize(const std::string& piece, std::vector<int32_t>& out) const {
  int64_t chars = 0;
  for (char c : piece) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  if (chars > max_chars_) {
    out.push_back(unk_id_);
    return;
  }
  const size_t first = out.size();
  std::string candidate;
  size_t start = 0;
  while (start < piece.size()) {
    // No token is longer than the longest in the vocabulary: start there (on a character boundary).
    size_t end = std::min(piece.size(), start + max_token_bytes_);
    while (end > start && end < piece.size() &&
           (static_cast<unsigned char>(piece[end]) & 0xC0) == 0x80)
      --end;
    std::optional<int32_t> found;
    while (start < end) {
      candidate.assign(start > 0 ? prefix_ : std::string());
      candidate.append(piece, start, end - start);
      found = vocab_.find(candidate);
      if (found) break;
      // One character shorter (the last UTF-8 sequence of the candidate).
      do {
        --end;
      } while (end > start && (static_cast<unsigned char>(piece[end]) & 0xC0) == 0x80);
    }
    if (!found) {  // the piece cannot be covered: all of it is unknown
      out.resize(first);
      out.push_back(unk_id_);
      return;
    }
    out.push_back(*found);
    start = end;
  }
}

WordLevel::WordLevel(Vocab vocab, const std::string& unk_token, const Where& where)
    : vocab_(std::move(vocab)), unk_id_(unk_id(vocab_, unk_token, where)) {}

void WordLevel::tokenize(const std::string& piece, std::vector<int32_t>& out) const {
  out.push_back(vocab_.find(piece).value_or(unk_id_));
}

std::unique_ptr<Model> parse_wordpiece(const Json& json, const Where& where) {
  Vocab vocab = parse_vocab(get_object(json, "vocab", where), where / "vocab");
  return std::make_unique<WordPiece>(
      std::move(vocab), get_string(json, "unk_token", where, "[UNK]"),
      get_string(json, "continuing_subword_prefix", where, "##"),
      get_int(json, "max_input_chars_per_word", where, 0, INT64_MAX, 100), where);
}

std::unique_ptr<Model> parse_wordlevel(const Json& json, const Where& where) {
  Vocab vocab = parse_vocab(get_object(json, "vocab", where), where / "vocab");
  return std::make_unique<WordLevel>(std::move(vocab),
                                     get_string(json, "unk_token", where, "<unk>"), where);
}

}  // namespace hftrain::tokenizer::hf
