// The Precompiled normalizer of tokenizer.json files converted from SentencePiece models (T5,
// ALBERT, XLM-R, mT5, ...). Its precompiled_charsmap is the base64 of
//   u32 trie_size (little-endian) | a Darts-clone double-array trie, trie_size / 4 u32 units |
//   the replacement strings, each ended by a NUL byte,
// the trie mapping UTF-8 byte strings to offsets of replacements. It is applied as the
// spm_precompiled crate in `tokenizers` applies it, not as SentencePiece does: per extended
// grapheme cluster (hf_grapheme.h), a cluster of under 6 bytes is replaced by the replacement of
// its SHORTEST prefix that has one ("Ａ\u0301" becomes "A", the accent dropped; "\r\n" one
// space); otherwise each character by its own replacement, or kept.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/hf/hf_json.h"
#include "tokenizer/hf/hf_normalizer.h"

namespace hftrain::tokenizer::hf {

class CharsMap {
 public:
  // `blob` is the decoded precompiled_charsmap. Throws DataError (via `where`) when it is too
  // short for its trie, its replacements are not UTF-8, or a path of the trie leads outside the
  // trie or to an offset that is not the start of a character of the replacements (where
  // `tokenizers` would fail or crash on some text).
  CharsMap(std::string_view blob, const Where& where);

  // The replacement of the shortest prefix of `chunk` that has one; nullopt when none has.
  std::optional<std::string_view> transform(std::string_view chunk) const;

  // `text` (valid UTF-8) normalized as described above. Throws DataError when it grows past
  // max_grown_size.
  std::string normalize(std::string_view text) const;

 private:
  void check_trie(const Where& where) const;

  std::vector<uint32_t> units_;
  std::string replacements_;
};

// The normalizer of {"type": "Precompiled", "precompiled_charsmap": "<base64>"}.
std::unique_ptr<Normalizer> parse_precompiled(const Json& json, const Where& where);

}  // namespace hftrain::tokenizer::hf
