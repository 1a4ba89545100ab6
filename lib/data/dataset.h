// A split's tokens: one or more corpora (a tokenized-and-cached set of text files, token shards)
// and the pieces of them that belong to this split, seen as one virtual token stream. Splits are
// made here: by separate sources, or by a fraction of the documents chosen with a seeded
// permutation (a corpus that is one long stream, a token shard, gives the tail of its tokens).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/source.h"
#include "data/token_cache.h"
#include "data/token_corpus.h"
#include "tokenizer/tokenizer.h"

namespace hftrain::data {

// A range of tokens of one corpus, in its document order.
struct Piece {
  uint32_t corpus = 0;
  uint64_t begin = 0;
  uint64_t end = 0;
};

class TokenDataset {
 public:
  TokenDataset(std::vector<std::shared_ptr<const TokenCorpus>> corpora, std::vector<Piece> pieces);
  // The datasets one after another, as one.
  static std::shared_ptr<const TokenDataset> concat(const std::vector<std::shared_ptr<const TokenDataset>>& parts);

  uint64_t num_tokens() const { return starts_.back(); }
  const std::vector<Piece>& pieces() const { return pieces_; }
  const TokenCorpus& corpus(uint32_t index) const { return *corpora_[index]; }
  // Copies tokens [begin, begin + count) of the virtual stream (the pieces one after another)
  // and their loss flags. With `starts`, also marks (1) the positions where a document begins:
  // a corpus's document start, or the start of a piece. O(log pieces + log docs + count).
  void read(uint64_t begin, uint64_t count, int64_t* tokens, uint8_t* train, uint8_t* starts = nullptr) const;

 private:
  std::vector<std::shared_ptr<const TokenCorpus>> corpora_;
  std::vector<Piece> pieces_;
  std::vector<uint64_t> starts_;  // virtual offset of each piece, plus the total
};

struct DatasetOptions {
  std::vector<SourceSpec> train;       // required
  std::vector<SourceSpec> validation;  // separate validation sources; empty: see validation_fraction
  // With no validation sources: the fraction of the train documents held out for validation
  // (0 = no validation split). The held-out documents are chosen by a permutation of split_seed.
  double validation_fraction = 0.0;
  uint64_t split_seed = 0;
  ChatTemplate chat;
  CacheOptions cache;
};

// A source kept apart from the others: one of a weighted training mixture, or a validation source
// evaluated on its own.
struct SourceDataset {
  std::string name;  // source_name(): in metrics (data/<name>/tokens, eval/<name>/loss)
  double weight = 0;  // training mixtures: the source's relative share of the samples drawn
  std::shared_ptr<const TokenDataset> data;
};

struct Datasets {
  std::shared_ptr<const TokenDataset> train;       // every training source as one
  std::shared_ptr<const TokenDataset> validation;  // null when there is no validation split
  // A weighted mixture (training sources with weights): each source with a weight above 0.
  std::vector<SourceDataset> train_sources;
  // Evaluated one by one: several validation sources, or a mixture's held-out parts (with
  // validation_fraction); `validation` is then all of them together.
  std::vector<SourceDataset> validation_sources;
  uint64_t cache_hits = 0;    // text corpora read from the token cache
  uint64_t cache_misses = 0;  // text corpora tokenized in this call
  TokenizeStats tokenized{};  // of those tokenized in this call (zero when all were hits)
};

// Reads (or maps from the cache) every source and makes the splits. Throws DataError for bad
// sources and files, ConfigError for a fraction outside [0, 1).
Datasets build_datasets(const DatasetOptions& options, const tokenizer::Tokenizer& tokenizer);

}  // namespace hftrain::data
