// Labelled examples (labelled.h) to model inputs: tokenised as Hugging Face tokenizers encode a
// text or a text pair for a classifier (tokenizer(text, text_pair, truncation=True,
// max_length=N)), then padded into batches. Tagged sentences (tagged.h) likewise, one label per
// word on its first piece (tokenizer(words, is_split_into_words=True), as transformers' token
// classification examples align them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "data/labelled.h"
#include "data/tagged.h"
#include "tokenizer/tokenizer.h"

namespace hftrain::data {

struct EncodedExample {
  std::vector<int32_t> input_ids;       // special tokens included: [CLS] a [SEP] (b [SEP])
  std::vector<int32_t> token_type_ids;  // the segment of each id: 0 for a's part, 1 for b's (BERT)
  int64_t label = 0;                    // class id
  // Token classification: per id, the word's tag id on its first piece, -100 on the others and on
  // the special tokens; empty for sequence classification.
  std::vector<int64_t> token_labels;
};

// The special tokens and type ids the tokenizer puts around a (and b): for a tokenizer.json
// tokenizer its post-processor (HfTokenizer::with_special_tokens); for byte-level BPE its
// single-sequence prefix and suffix (a pair only when it has none); for the byte tokenizer none.
// Without a post-processor a pair is a then b, with type ids 0 then 1, as in `tokenizers`. Throws
// DataError naming `origin` for a pair the tokenizer cannot frame.
struct FramedIds {
  std::vector<int32_t> ids;
  std::vector<int32_t> type_ids;
};
FramedIds frame_ids(const tokenizer::Tokenizer& tokenizer, const std::vector<int32_t>& a,
                    const std::vector<int32_t>* b, const std::string& origin);

// How many tokens of a and of b are kept so that both fit in `budget` (max_length less the special
// tokens), as `tokenizers`' "longest_first" truncation: a pair that fits stays whole; else the
// longer one is cut to what the shorter leaves, and when even that cannot fit both get half (the
// longer one, or b when they are as long, the odd token). One sequence (b_len absent) is cut to
// `budget`.
std::pair<size_t, size_t> truncated_lengths(size_t a_len, std::optional<size_t> b_len,
                                            size_t budget);

// Encodes one example: the texts with tokenizer.encode (special tokens' text in the data stays
// text, as everywhere in hftrain's data), cut by truncated_lengths from the end, then the
// tokenizer's special tokens and type ids: for a tokenizer.json tokenizer its post-processor
// (HfTokenizer::with_special_tokens); for byte-level BPE its single-sequence prefix and suffix
// (a pair only when it has none); for the byte tokenizer none. Without a post-processor a pair is
// a then b, with type ids 0 then 1, as in `tokenizers`.
// Throws ConfigError when max_length leaves no room for text beside the special tokens, DataError
// (naming the example's origin) for a pair where the tokenizer cannot frame one.
EncodedExample encode_example(const tokenizer::Tokenizer& tokenizer, const LabelledExample& example,
                              int64_t label, int64_t max_length);

// Encodes one tagged sentence: each word as `tokenizers` encodes a pre-split word (with a space
// before it, as transformers' is_split_into_words does: byte-level BPE then marks it as a word
// start; WordPiece and Metaspace are unchanged), the pieces cut from the end to leave room for the
// special tokens (the words past the cut lose their tags, as in transformers), then framed. A word
// the tokenizer encodes to nothing carries no label. Throws ConfigError when max_length leaves no
// room beside the special tokens.
EncodedExample encode_tagged(const tokenizer::Tokenizer& tokenizer, const TaggedSentence& sentence,
                             const std::vector<int64_t>& tags, int64_t max_length);

// All examples, with their labels' ids (label_ids in labelled.h), in order.
std::vector<EncodedExample> encode_examples(const tokenizer::Tokenizer& tokenizer,
                                            const std::vector<LabelledExample>& examples,
                                            const std::vector<int64_t>& labels, int64_t max_length);

// A padded batch in host memory, row-major (B, T), right-padded as Hugging Face's
// DataCollatorWithPadding does.
struct ClassificationBatch {
  int64_t batch_size = 0;               // B
  int64_t seq_len = 0;                  // T: the longest example, rounded up to pad_to_multiple_of
  std::vector<int64_t> input_ids;       // (B, T), pad_id past each example's end
  std::vector<int64_t> attention_mask;  // (B, T), 1 = token, 0 = padding
  std::vector<int64_t> token_type_ids;  // (B, T), 0 on padding
  std::vector<int64_t> labels;          // (B), or (B, T) for token labels (-100 on padding)
  bool token_labels = false;
};

// Pads `examples` to their longest (rounded up to a multiple of pad_to_multiple_of, >= 1).
ClassificationBatch collate_classification(std::span<const EncodedExample> examples, int32_t pad_id,
                                           int64_t pad_to_multiple_of = 1);
// The same for the rows `rows` of `examples`, in that order (a loader's batch: no example copied).
ClassificationBatch collate_classification(std::span<const EncodedExample> examples, std::span<const uint64_t> rows,
                                           int32_t pad_id, int64_t pad_to_multiple_of = 1);

}  // namespace hftrain::data
