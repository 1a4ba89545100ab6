// The post-processors of tokenizer.json: what `tokenizers` adds around an encoding when asked to
// add special tokens (TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence).
// hftrain reads them for encodings with special tokens and to find a tokenizer's end-of-sequence
// token ("[CLS] $A [SEP]": [SEP]).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "tokenizer/hf/hf_json.h"

namespace hftrain::tokenizer::hf {

// Ids with the segment each belongs to: `tokenizers`' Encoding ids and type_ids (BERT's
// token_type_ids).
struct TypedIds {
  std::vector<int32_t> ids;
  std::vector<int32_t> type_ids;  // same length as ids
};

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // The ids of sequence `a` (and `b`, for a pair) with the special tokens around them.
  std::vector<int32_t> process(const std::vector<int32_t>& a, const std::vector<int32_t>* b) const;
  // The same with type ids, as `tokenizers` assigns them: TemplateProcessing's type_id of each
  // piece; BertProcessing 0 through the first [SEP] and 1 after; RobertaProcessing 0 throughout;
  // ByteLevel keeps the inputs' (0 for A, 1 for B: what encoding a pair gives each sequence).
  virtual TypedIds process_typed(const TypedIds& a, const TypedIds* b) const = 0;
  // The special-token ids a single sequence gets before and after it.
  virtual std::vector<int32_t> single_prefix() const = 0;
  virtual std::vector<int32_t> single_suffix() const = 0;
  // True when the processor leaves ids and type ids as they are (ByteLevel: it trims offsets, which
  // hftrain does not keep); in a Sequence, such a processor does not join a pair into one.
  virtual bool passes_through() const { return false; }
};

// What encode(a, b, add_special_tokens=True) gives once `processor` ran (null: the file has none,
// and the sequences are joined): a and b are the model's ids, in segments 0 and 1 until the
// processor assigns its own type ids. b is null for one sequence.
TypedIds post_process(const PostProcessor* processor, const std::vector<int32_t>& a,
                      const std::vector<int32_t>* b);

// nullptr for null. Throws DataError naming the JSON path for an unknown type, a template naming a
// special token it does not define, or a special token id outside [0, vocab_size) (the vocabulary
// with its added tokens): checked here, so that no bad id reaches an encoding.
std::unique_ptr<PostProcessor> parse_post_processor(const Json& json, const Where& where,
                                                    int32_t vocab_size);

}  // namespace hftrain::tokenizer::hf
