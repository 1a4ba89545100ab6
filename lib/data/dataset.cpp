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

std::shared_ptr<const TokenDataset> TokenDataset::concat(
    const std::vector<std::shared_ptr<const TokenDataset>>& parts) {
  std::vector<std::shared_ptr<const TokenCorpus>> corpora;
  std::vector<Piece> pieces;
  for (const auto& part : parts) {
    const auto first = static_cast<uint32_t>(corpora.size());
    corpora.insert(corpora.end(), part->corpora_.begin(), part->corpora_.end());
    for (Piece piece : part->pieces_) {
      piece.corpus += first;
      pieces.push_back(piece);
    }
  }
  return std::make_shared<TokenDataset>(std::move(corpora), std::move(pieces));
}

void TokenDataset::read(uint64_t begin, uint64_t count, int64_t* tokens, uint8_t* train, uint8_t* starts) const {
  // The piece holding `begin`: the last one that starts at or before it.
  size_t p = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), begin) - starts_.begin()) - 1;
  while (count > 0 && p < pieces_.size()) {
    const Piece& piece = pieces_[p];
    const uint64_t offset = begin - starts_[p];
    const uint64_t n = std::min(count, (piece.end - piece.begin) - offset);
    const TokenCorpus& corpus = *corpora_[piece.corpus];
    corpus.copy(piece.begin + offset, piece.begin + offset + n, tokens, train);
    if (starts) {
      std::fill(starts, starts + n, uint8_t{0});
      if (offset == 0) starts[0] = 1;
      const auto docs = corpus.doc_starts();
      const uint64_t from = piece.begin + offset;
      for (auto it = std::lower_bound(docs.begin(), docs.end(), from); it != docs.end() && *it < from + n; ++it) {
        starts[*it - from] = 1;
      }
      starts += n;
    }
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

namespace {

// What build_datasets builds from one group of training sources: its split, and the held-out part
// when validation_fraction makes one.
struct Split {
  std::shared_ptr<const TokenDataset> train;
  std::shared_ptr<const TokenDataset> held_out;  // null without validation_fraction
};

class Builder {
 public:
  Builder(const DatasetOptions& options, const tokenizer::Tokenizer& tokenizer, Datasets& out)
      : options_(options), tokenizer_(tokenizer), out_(out) {}

  std::vector<std::shared_ptr<const TokenCorpus>> load(const std::vector<SourceSpec>& sources) {
    Corpora c = load_corpora(sources, options_, tokenizer_);
    out_.cache_hits += c.hits;
    out_.cache_misses += c.misses;
    out_.tokenized.text_bytes += c.tokenized.text_bytes;
    out_.tokenized.seconds += c.tokenized.seconds;
    out_.tokenized.threads = std::max(out_.tokenized.threads, c.tokenized.threads);
    return c.list;
  }

  Split split(const std::vector<SourceSpec>& sources, bool hold_out) {
    const auto corpora = load(sources);
    if (!hold_out) return {std::make_shared<TokenDataset>(corpora, whole(corpora)), nullptr};
    std::vector<Piece> train_pieces;
    std::vector<Piece> validation_pieces;
    split_by_fraction(corpora, options_.validation_fraction, options_.split_seed, train_pieces, validation_pieces);
    return {std::make_shared<TokenDataset>(corpora, std::move(train_pieces)),
            std::make_shared<TokenDataset>(corpora, std::move(validation_pieces))};
  }

 private:
  const DatasetOptions& options_;
  const tokenizer::Tokenizer& tokenizer_;
  Datasets& out_;
};

std::vector<std::shared_ptr<const TokenDataset>> data_of(const std::vector<SourceDataset>& sources) {
  std::vector<std::shared_ptr<const TokenDataset>> out;
  for (const auto& s : sources) out.push_back(s.data);
  return out;
}

// Names tell sources apart in metrics: two sources may not share one.
void check_names(const std::vector<SourceDataset>& sources, const std::string& list) {
  for (size_t i = 0; i < sources.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (sources[i].name == sources[j].name) {
        throw util::ConfigError("two " + list + " sources are named `" + sources[i].name + "`",
                                "give each a distinct name: {path: ..., name: ...}");
      }
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
  Builder builder(options, tokenizer, out);
  const bool hold_out = options.validation.empty() && options.validation_fraction > 0.0;
  const bool mixture = std::any_of(options.train.begin(), options.train.end(),
                                   [](const SourceSpec& s) { return s.weight.has_value(); });
  if (mixture) {
    // Each source on its own (its own token cache), so that samples can be drawn by weight.
    for (const auto& spec : options.train) {
      if (!spec.weight.has_value() || *spec.weight <= 0.0) {
        util::log::info("data: source " + source_name(spec) + " has weight 0 and is not drawn from");
        continue;
      }
      Split part = builder.split({spec}, hold_out);
      out.train_sources.push_back({source_name(spec), *spec.weight, part.train});
      if (part.held_out) out.validation_sources.push_back({source_name(spec), 0.0, part.held_out});
    }
    check_names(out.train_sources, "data.train");
    out.train = TokenDataset::concat(data_of(out.train_sources));
  } else {
    Split all = builder.split(options.train, hold_out);
    out.train = all.train;
    out.validation = all.held_out;
  }
  if (!options.validation.empty()) {
    if (options.validation.size() == 1) {
      out.validation = builder.split(options.validation, false).train;
    } else {
      for (const auto& spec : options.validation) {
        out.validation_sources.push_back({source_name(spec), 0.0, builder.split({spec}, false).train});
      }
    }
  }
  if (!out.validation_sources.empty()) {
    check_names(out.validation_sources, "data.validation");
    out.validation = TokenDataset::concat(data_of(out.validation_sources));
  }
  return out;
}

}  // namespace hftrain::data
