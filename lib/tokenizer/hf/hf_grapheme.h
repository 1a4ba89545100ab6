// Extended grapheme clusters (UAX #29), found as the Rust crate unicode-segmentation finds them
// for the `tokenizers` library: its Precompiled normalizer (hf_precompiled.h) looks a
// SentencePiece charsmap up one cluster at a time. The properties come from the generated
// hf_grapheme_tables.cpp (tests/conformance/tokenizer_gen_grapheme_tables.py).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hftrain::tokenizer::hf {

// Grapheme_Cluster_Break, in the order of the generator's BREAKS.
enum class GraphemeBreak : uint8_t {
  kOther,
  kCr,
  kLf,
  kControl,
  kExtend,
  kZwj,
  kRegionalIndicator,
  kPrepend,
  kSpacingMark,
  kL,
  kV,
  kT,
  kLv,
  kLvt,
};

struct GraphemeRange {
  uint32_t first;
  uint32_t last;  // inclusive
  uint8_t props;  // hf_grapheme_tables.cpp says how they are packed
};
extern const GraphemeRange kGraphemeRanges[];
extern const size_t kGraphemeRangesSize;

// The end of the grapheme cluster that starts at `begin` (< text.size()) of the UTF-8 `text`.
// Clusters start where the previous one ends, from 0.
size_t grapheme_end(std::string_view text, size_t begin);

}  // namespace hftrain::tokenizer::hf
