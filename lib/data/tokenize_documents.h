// Text files to a token corpus, on several threads: documents are read in order, encoded in
// blocks by `threads` workers (a document is the unit of work: one long document is encoded by one
// thread), and appended in their file order, so the corpus is the same whatever the thread count.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <utility>
#include <vector>

#include "data/source.h"
#include "data/token_corpus.h"
#include "tokenizer/tokenizer.h"

namespace hftrain::data {

struct TokenizeStats {
  uint64_t text_bytes = 0;   // bytes of document text encoded (segments, not the file's framing)
  double seconds = 0.0;      // reading, encoding and assembling
  int threads = 1;           // workers used
};

// Tokenizes the documents of `files` (each with the spec it came from) into one corpus: each
// document's segments, then the end-of-text token (a target: the model learns where a document
// ends). Loss flags are kept only when some token is context only (a chat prompt). `threads` < 1
// counts as 1. Errors in a file (DataError) reach the caller as they would on one thread.
std::shared_ptr<TokenCorpus> tokenize_files(const std::vector<std::pair<SourceSpec, std::filesystem::path>>& files,
                                            const ChatTemplate& chat, const tokenizer::Tokenizer& tokenizer,
                                            int threads = 1, TokenizeStats* stats = nullptr);

}  // namespace hftrain::data
