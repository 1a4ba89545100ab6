#include "data/dataset.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "data/sampler.h"
#include "data/token_shard.h"
#include "util/error.h"
#include "util/log.h"

namespace hftrain::data {
namespace fs = std::filesystem;

TokenDataset::TokenDataset(std::vector<std::shared_ptr<const TokenCorpus>> corpora, std::vector<Piece> pieces)
    : corpora_(std::move(corpora)) {
  starts_.push_back(0);
  for (const auto& piece : pieces) {
    if (piece.end <= piece.begin) continue;
    pieces_.push_back(piece);
    starts_.push_back(starts_.back() + (piece.end - piece.begin));
  }
}

void TokenDataset::read(uint64_t begin, uint64_t count, int64_t* tokens, uint8_t* train) const {
  // The piece holding `begin`: the last one that starts at or before it.
  size_t p = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), begin) - starts_.begin()) - 1;
  while (count > 0 && p < pieces_.size()) {
    const Piece& piece = pieces_[p];
    const uint64_t offset = begin - starts_[p];
    const uint64_t n = std::min(count, (piece.end - piece.begin) - offset);
    corpora_[piece.corpus]->copy(piece.begin + offset, piece.begin + offset + n, tokens, train);
    tokens += n;
    train += n;
    begin += n;
    count -= n;
    ++p;
  }
}

namespace {

struct Corpora {
  std::vector<std::shared_ptr<const TokenCorpus>> list;
  uint64_t hits = 0;
  uint64_t misses = 0;
  TokenizeStats tokenized{};
};

Corpora load_corpora(const std::vector<SourceSpec>& sources, const DatasetOptions& options,
                     const tokenizer::Tokenizer& tokenizer) {
  Corpora out;
  std::vector<std::pair<SourceSpec, fs::path>> text_files;
  for (const auto& spec : sources) {
    for (const auto& file : expand_source(spec)) {
      if (resolve_format(spec, file) == SourceFormat::kTokens) {
        out.list.push_back(open_token_shard(file, spec.dtype, tokenizer.vocab_size()));
      } else {
        text_files.emplace_back(spec, file);
      }
    }
  }
  if (!text_files.empty()) {
    CacheResult cached = load_or_tokenize(text_files, options.chat, tokenizer, options.cache);
    (cached.hit ? out.hits : out.misses) += 1;
    std::string speed;
    if (!cached.hit) {
      out.tokenized.text_bytes += cached.stats.text_bytes;
      out.tokenized.seconds += cached.stats.seconds;
      out.tokenized.threads = cached.stats.threads;
      char buf[128];
      std::snprintf(buf, sizeof(buf), " in %.2f s (%.1f MB/s of text, %d threads)", cached.stats.seconds,
                    static_cast<double>(cached.stats.text_bytes) / 1e6 / std::max(cached.stats.seconds, 1e-9),
                    cached.stats.threads);
      speed = buf;
    }
    util::log::info(std::string(cached.hit ? "token cache hit: " : "tokenized: ") +
                    std::to_string(text_files.size()) + " files, " + std::to_string(cached.num_documents) +
                    " documents, " + std::to_string(cached.corpus->num_tokens()) + " tokens" + speed +
                    (cached.file.empty() ? "" : " (" + cached.file.string() + ")"));
    out.list.insert(out.list.begin(), cached.corpus);
  }
  return out;
}

std::vector<Piece> whole(const std::vector<std::shared_ptr<const TokenCorpus>>& corpora) {
  std::vector<Piece> pieces;
  for (uint32_t c = 0; c < corpora.size(); ++c) pieces.push_back(Piece{c, 0, corpora[c]->num_tokens()});
  return pieces;
}

// Splits each corpus: documents chosen by a seeded permutation go to validation (adjacent
// documents of the same side merge into one piece); a one-document corpus gives its tail.
void split_by_fraction(const std::vector<std::shared_ptr<const TokenCorpus>>& corpora, double fraction,
                       uint64_t seed, std::vector<Piece>& train, std::vector<Piece>& validation) {
  auto add = [](std::vector<Piece>& side, uint32_t corpus, uint64_t begin, uint64_t end) {
    if (!side.empty() && side.back().corpus == corpus && side.back().end == begin) {
      side.back().end = end;
    } else {
      side.push_back(Piece{corpus, begin, end});
    }
  };
  for (uint32_t c = 0; c < corpora.size(); ++c) {
    const TokenCorpus& corpus = *corpora[c];
    const uint64_t docs = corpus.num_docs();
    if (docs < 2) {
      auto cut = static_cast<uint64_t>(std::llround(static_cast<double>(corpus.num_tokens()) * (1.0 - fraction)));
      add(train, c, 0, cut);
      add(validation, c, cut, corpus.num_tokens());
      continue;
    }
    auto held = static_cast<uint64_t>(std::llround(static_cast<double>(docs) * fraction));
    held = std::clamp<uint64_t>(held, 1, docs - 1);
    Permutation perm(docs, mix64(seed) ^ mix64(c + 0x243F6A8885A308D3ull));
    auto starts = corpus.doc_starts();
    for (uint64_t d = 0; d < docs; ++d) {
      add(perm(d) < held ? validation : train, c, starts[d], starts[d + 1]);
    }
  }
}

}  // namespace

Datasets build_datasets(const DatasetOptions& options, const tokenizer::Tokenizer& tokenizer) {
  if (options.train.empty()) {
    throw util::ConfigError("no training data: the train source list is empty", "set data.train");
  }
  if (!(options.validation_fraction >= 0.0 && options.validation_fraction < 1.0)) {
    throw util::ConfigError("validation fraction " + std::to_string(options.validation_fraction) +
                                " is outside [0, 1)", "use e.g. 0.05 for 5% of the documents");
  }
  Datasets out;
  Corpora train = load_corpora(options.train, options, tokenizer);
  out.cache_hits += train.hits;
  out.cache_misses += train.misses;
  out.tokenized = train.tokenized;
  if (!options.validation.empty()) {
    Corpora validation = load_corpora(options.validation, options, tokenizer);
    out.cache_hits += validation.hits;
    out.cache_misses += validation.misses;
    out.tokenized.text_bytes += validation.tokenized.text_bytes;
    out.tokenized.seconds += validation.tokenized.seconds;
    out.tokenized.threads = std::max(out.tokenized.threads, validation.tokenized.threads);
    out.train = std::make_shared<TokenDataset>(train.list, whole(train.list));
    out.validation = std::make_shared<TokenDataset>(validation.list, whole(validation.list));
  } else if (options.validation_fraction > 0.0) {
    std::vector<Piece> train_pieces;
    std::vector<Piece> validation_pieces;
    split_by_fraction(train.list, options.validation_fraction, options.split_seed, train_pieces, validation_pieces);
    out.train = std::make_shared<TokenDataset>(train.list, std::move(train_pieces));
    out.validation = std::make_shared<TokenDataset>(train.list, std::move(validation_pieces));
  } else {
    out.train = std::make_shared<TokenDataset>(train.list, whole(train.list));
  }
  return out;
}

}  // namespace hftrain::data
