// Tokenized text is cached on disk so that a second run starts at once: one file per set of
// text sources, keyed by the files' paths, sizes and modification times, the source options and
// the tokenizer's fingerprint. A cache file is written crash-safely (temporary file, fsync,
// rename) and read back through a memory map. The full key text is stored in the file and
// compared on load, so a hash collision is a miss, never wrong data.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "data/source.h"
#include "data/token_corpus.h"
#include "data/tokenize_documents.h"
#include "tokenizer/tokenizer.h"
#include "util/env.h"

namespace hftrain::data {

struct CacheOptions {
  bool enabled = true;
  // Folder of the cache files; "" = default_cache_dir().
  std::string dir{};
  // Threads encoding documents on a miss (data.num_workers).
  int threads = 1;
};

// $HFTRAIN_CACHE_DIR, else $XDG_CACHE_HOME/hftrain/tokens, else ~/.cache/hftrain/tokens.
std::filesystem::path default_cache_dir(const util::Environment& env);

struct CacheResult {
  std::shared_ptr<TokenCorpus> corpus;
  bool hit = false;                // read from an existing cache file
  std::filesystem::path file;      // the cache file ("" when caching is off or writing failed)
  uint64_t num_documents = 0;
  TokenizeStats stats{};           // of the tokenization (zero on a hit)
};

// The key text of a set of text files (one per line: path, size, mtime) plus the options that
// change their tokens.
std::string cache_key(const std::vector<std::pair<SourceSpec, std::filesystem::path>>& files,
                      const ChatTemplate& chat, const tokenizer::Tokenizer& tokenizer);

// Tokenizes the documents of `files` (each with the spec it came from) into one corpus, or maps
// the cache file of the same key. A cache that cannot be written is reported as a warning and
// the run goes on with the in-memory corpus.
CacheResult load_or_tokenize(const std::vector<std::pair<SourceSpec, std::filesystem::path>>& files,
                             const ChatTemplate& chat, const tokenizer::Tokenizer& tokenizer,
                             const CacheOptions& options);

}  // namespace hftrain::data
