// The post-processors of tokenizer.json: what `tokenizers` adds around an encoding when asked to
// add special tokens (TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence).
// hftrain reads them for encodings with special tokens and to find a tokenizer's end-of-sequence
// token ("[CLS] $A [SEP]": [SEP]).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "data/hf_json.h"

namespace hftrain::data::hf {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // The ids of sequence `a` (and `b`, for a pair) with the special tokens around them.
  virtual std::vector<int32_t> process(const std::vector<int32_t>& a,
                                       const std::vector<int32_t>* b) const = 0;
  // The special-token ids a single sequence gets before and after it.
  virtual std::vector<int32_t> single_prefix() const = 0;
  virtual std::vector<int32_t> single_suffix() const = 0;
};

// nullptr for null. Throws DataError naming the JSON path for an unknown type or a template
// naming a special token it does not define.
std::unique_ptr<PostProcessor> parse_post_processor(const Json& json, const Where& where);

}  // namespace hftrain::data::hf
