// The Split pre-tokenizer of Hugging Face tokenizer.json files (Llama-3, Qwen2 and others):
// a regular expression whose matches and the text between them become the pieces
// ("Isolated" behaviour). Compiled with PCRE2 (Debian libpcre2-dev) in UTF and Unicode-property
// mode, which handles the lookaheads and \p{...} classes of those patterns as Oniguruma does.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hftrain::tokenizer {

class RegexSplitter {
 public:
  // Throws DataError naming `source` and the offset for a pattern PCRE2 does not accept.
  RegexSplitter(std::string pattern, const std::string& source);
  ~RegexSplitter();
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;

  // The pieces of `text` (valid UTF-8), in order; they concatenate back to `text`.
  std::vector<std::string_view> split(std::string_view text) const;
  // The non-empty matches of `text` (valid UTF-8) as [begin, end) byte ranges, left to right and
  // non-overlapping; empty matches are stepped over one character at a time. Throws DataError
  // naming `source` (the tokenizer file and the pattern's JSON path) when PCRE2 gives up on the
  // text (its match limit: catastrophic backtracking).
  std::vector<std::pair<size_t, size_t>> matches(std::string_view text) const;
  const std::string& pattern() const { return pattern_; }

 private:
  struct Impl;
  std::string pattern_;
  std::string source_;  // the file and JSON path of the pattern, for messages
  std::unique_ptr<Impl> impl_;
};

}  // namespace hftrain::tokenizer
