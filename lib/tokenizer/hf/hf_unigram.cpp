#include "tokenizer/hf/hf_unigram.h"

#include <cmath>
#include <limits>

#include "tokenizer/hf/hf_json_float.h"
#include "tokenizer/unicode.h"
#include "util/error.h"

namespace hftrain::tokenizer::hf {
namespace {

constexpr double kUnkPenalty = 10.0;  // tokenizers' K_UNK_PENALTY

Vocab make_vocab(const std::vector<std::string>& pieces) {
  Vocab v;
  v.tokens = pieces;
  v.present.assign(pieces.size(), true);
  v.ids.reserve(pieces.size());
  // Of equal pieces the last id wins, as in tokenizers' token_to_ids.
  for (size_t id = 0; id < pieces.size(); ++id) v.ids[pieces[id]] = static_cast<int32_t>(id);
  return v;
}

}  // namespace

Unigram::Unigram(std::vector<std::string> pieces, std::vector<double> scores,
                 std::optional<int32_t> unk_id, bool byte_fallback, const Where& where)
    : vocab_(make_vocab(pieces)),
      scores_(std::move(scores)),
      unk_id_(unk_id),
      byte_fallback_(byte_fallback),
      trie_(pieces),
      file_(*where.file) {
  if (unk_id_ && static_cast<size_t>(*unk_id_) >= pieces.size()) {
    fail(where / "unk_id",
         "is " + std::to_string(*unk_id_) + ", but model.vocab has " +
             std::to_string(pieces.size()) + " pieces",
         "unk_id is the position of the unknown token in model.vocab");
  }
  double min_score = std::numeric_limits<double>::infinity();
  for (double s : scores_) min_score = std::min(min_score, s);
  unk_score_ = min_score - kUnkPenalty;
  for (int b = 0; b < 256; ++b) {
    static const char* kHex = "0123456789ABCDEF";
    const std::string name = std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">";
    byte_ids_[b] = vocab_.find(name).value_or(-1);
  }
}

std::vector<std::pair<size_t, size_t>> Unigram::segment(const std::string& piece) const {
  // best[i]: the best path over piece[0, i), ending in the piece `id` that starts at `start`
  // (-1: no path yet). Only character boundaries are ever reached.
  struct Best {
    double score = 0;
    int32_t id = 0;
    int64_t start = -1;
  };
  std::vector<Best> best(piece.size() + 1);
  auto wins = [&best](size_t end, double score) {
    return best[end].start < 0 || score > best[end].score;  // ties keep the earlier start
  };
  for (size_t start = 0; start < piece.size();) {
    const double here = best[start].score;
    size_t len = 1;
    unicode::decode(piece, start, len);
    bool single = false;  // a piece covers exactly this character
    trie_.prefixes(std::string_view(piece).substr(start), [&](size_t n, int32_t id) {
      const double score = scores_[static_cast<size_t>(id)] + here;
      if (wins(start + n, score)) best[start + n] = {score, id, static_cast<int64_t>(start)};
      single = single || n == len;
    });
    if (!single && wins(start + len, unk_score_ + here)) {
      if (!unk_id_) {
        throw util::DataError(file_ + ": no piece of the Unigram model covers " +
                                  shown(piece.substr(start, len)) + " and model.unk_id is null",
                              "the tokenizers library fails on this text too; give the model an "
                              "unk_id");
      }
      best[start + len] = {unk_score_ + here, *unk_id_, static_cast<int64_t>(start)};
    }
    start += len;
  }
  // Back from the end; runs of unknown characters become one range.
  std::vector<std::pair<size_t, size_t>> ranges;
  size_t unk_end = 0;
  bool in_unk = false;
  for (size_t end = piece.size(); end > 0;) {
    const Best& b = best[end];
    const auto start = static_cast<size_t>(b.start);
    if (unk_id_ && b.id == *unk_id_) {
      if (!in_unk) unk_end = end;
      in_unk = true;
    } else {
      if (in_unk) ranges.emplace_back(end, unk_end);
      in_unk = false;
      ranges.emplace_back(start, end);
    }
    end = start;
  }
  if (in_unk) ranges.emplace_back(0, unk_end);
  return {ranges.rbegin(), ranges.rend()};
}

void Unigram::tokenize(const std::string& piece, std::vector<int32_t>& out) const {
  for (const auto& [begin, end] : segment(piece)) {
    // As tokenizers: each range's text is looked up again, so a fused run of unknown characters
    // that happens to be a piece gets that piece's id.
    const std::string text = piece.substr(begin, end - begin);
    if (auto id = vocab_.find(text)) {
      out.push_back(*id);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (char c : text) all = all && byte_ids_[static_cast<uint8_t>(c)] >= 0;
      if (all) {
        for (char c : text) out.push_back(byte_ids_[static_cast<uint8_t>(c)]);
        continue;
      }
    }
    out.push_back(*unk_id_);  // only unknown runs are missing from the vocabulary
  }
}

std::unique_ptr<Model> parse_unigram(const Json& json, const Where& where) {
  const Json& list = get_array(json, "vocab", where);
  const Where at = where / "vocab";
  if (list.size() > static_cast<size_t>(kMaxTokenId) + 1)
    fail(at, "has " + std::to_string(list.size()) + " pieces, more than hftrain accepts");
  std::vector<std::string> pieces;
  std::vector<double> scores;
  pieces.reserve(list.size());
  scores.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& entry = list[i];
    if (!entry.is_array() || entry.size() != 2) fail(at[i], "is not a [piece, score] pair");
    pieces.push_back(as_string(entry[0], at[i][0]));
    const Json& score = entry[1];
    if (!score.is_number()) fail(at[i][1], "is not a number (the piece's score)");
    const double s = score.get<double>();
    if (!std::isfinite(s)) fail(at[i][1], "is not a finite number");
    scores.push_back(score.is_number_float() ? tokenizers_double(s) : s);
  }
  std::optional<int32_t> unk_id;
  if (const Json* u = member(json, "unk_id", where))
    unk_id = static_cast<int32_t>(as_int(*u, where / "unk_id", 0, kMaxTokenId));
  const bool byte_fallback = get_bool(json, "byte_fallback", where, false);
  return std::make_unique<Unigram>(std::move(pieces), std::move(scores), unk_id, byte_fallback,
                                   where);
}

}  // namespace hftrain::tokenizer::hf
