#include "tokenizer/bpe_trainer.h"

#include <unordered_set>

#include "tokenizer/pretokenizer.h"
#include "util/error.h"

namespace hftrain::tokenizer {
namespace {

struct Word {
  std::vector<int32_t> symbols;
  int64_t count;
};

}  // namespace

BpeTrainer::BpeTrainer(BpeTrainerOptions options) : options_(std::move(options)) {}

void BpeTrainer::add_text(std::string_view text) {
  for (std::string_view piece : gpt2_split(text)) ++piece_counts_[std::string(piece)];
}

BpeTokenizer BpeTrainer::train() const {
  const auto specials = static_cast<int32_t>(options_.special_tokens.size());
  if (options_.vocab_size < 256 + specials) {
    throw util::ConfigError("BPE vocab_size " + std::to_string(options_.vocab_size) + " is below the 256 bytes plus " +
                            std::to_string(specials) + " special tokens", "raise the vocabulary size");
  }
  BpeModel model;
  for (int b = 0; b < 256; ++b) model.vocab.emplace_back(1, static_cast<char>(b));

  std::vector<Word> words;
  words.reserve(piece_counts_.size());
  for (const auto& [piece, count] : piece_counts_) {
    Word w{{}, count};
    for (char c : piece) w.symbols.push_back(static_cast<uint8_t>(c));
    words.push_back(std::move(w));
  }
  // Pair counts over all words, and which words hold each pair (may list stale words; checked).
  std::unordered_map<uint64_t, int64_t> counts;
  std::unordered_map<uint64_t, std::unordered_set<uint32_t>> where;
  auto add_pairs = [&](uint32_t w, int64_t sign) {
    const auto& s = words[w].symbols;
    for (size_t i = 0; i + 1 < s.size(); ++i) {
      const uint64_t key = bpe_pair_key(s[i], s[i + 1]);
      counts[key] += sign * words[w].count;
      if (sign > 0) where[key].insert(w);
    }
  };
  for (uint32_t w = 0; w < words.size(); ++w) add_pairs(w, 1);

  std::unordered_map<std::string, int32_t> ids;
  for (int32_t b = 0; b < 256; ++b) ids.emplace(model.vocab[static_cast<size_t>(b)], b);
  const int32_t target_tokens = options_.vocab_size - specials;
  while (static_cast<int32_t>(model.vocab.size()) < target_tokens) {
    uint64_t best = 0;
    int64_t best_count = 0;
    for (const auto& [key, count] : counts) {
      if (count > best_count || (count == best_count && count > 0 && key < best)) {
        best = key;
        best_count = count;
      }
    }
    if (best_count < std::max<int64_t>(options_.min_frequency, 1)) break;
    const auto a = static_cast<int32_t>(best >> 32);
    const auto b = static_cast<int32_t>(best & 0xFFFFFFFFu);
    // Two different pairs can spell the same bytes ("ab"+"c", "a"+"bc"): they share one token.
    std::string bytes = model.vocab[static_cast<size_t>(a)] + model.vocab[static_cast<size_t>(b)];
    auto [found, fresh] = ids.emplace(bytes, static_cast<int32_t>(model.vocab.size()));
    if (fresh) model.vocab.push_back(std::move(bytes));
    const int32_t merged = found->second;
    model.merges.push_back(BpeMerge{a, b, merged});
    const std::unordered_set<uint32_t> holders = std::move(where[best]);
    where.erase(best);
    for (uint32_t w : holders) {
      auto& s = words[w].symbols;
      bool has = false;
      for (size_t i = 0; i + 1 < s.size() && !has; ++i) has = s[i] == a && s[i + 1] == b;
      if (!has) continue;
      add_pairs(w, -1);
      std::vector<int32_t> next;
      next.reserve(s.size());
      for (size_t i = 0; i < s.size(); ++i) {
        if (i + 1 < s.size() && s[i] == a && s[i + 1] == b) {
          next.push_back(merged);
          ++i;
        } else {
          next.push_back(s[i]);
        }
      }
      s = std::move(next);
      add_pairs(w, 1);
    }
    counts.erase(best);
    // Drop pairs no word holds any more, so that the scan above stays proportional to live pairs.
    for (auto it = counts.begin(); it != counts.end();) it = it->second == 0 ? counts.erase(it) : std::next(it);
  }
  for (const auto& content : options_.special_tokens) {
    model.specials.emplace_back(static_cast<int32_t>(model.vocab.size()), content);
    model.vocab.push_back(content);
  }
  return BpeTokenizer(std::move(model));
}

}  // namespace hftrain::tokenizer
