// A document's segments (context and loss spans) to ids and per-segment token ends.
//
// Plain documents (prompt/response JSONL) encode each segment on its own: that is hftrain's own
// format. A chat template's rendering must encode as transformers encodes apply_chat_template's
// text: the whole text at once. Cutting it at the loss spans gives the same ids when every span
// boundary is also a boundary of the tokenizer's splitting (byte-level BPE at a newline or a
// special token); not for SentencePiece-style tokenizers, which prepend '▁' at the start of a
// text (a Prepend normalizer, or Metaspace's prepend_scheme) and may merge across a boundary.
// So a rendered document is encoded whole as well; where the two differ, the whole text's ids are
// kept and each boundary is placed by encoding the text up to it: the ids it shares with the whole
// encoding end before the boundary, and a token that straddles the boundary goes to the loss span,
// as transformers' assistant mask (char_to_token of the span's first and last character) does.
#pragma once

#include <cstdint>
#include <vector>

#include "data/source.h"
#include "tokenizer/tokenizer.h"

namespace hftrain::data {

struct EncodedSegments {
  std::vector<int32_t> ids;
  std::vector<uint32_t> segment_ends;  // ids.size() after each segment
};

EncodedSegments encode_segments(const tokenizer::Tokenizer& tokenizer, const Document& doc);

}  // namespace hftrain::data
