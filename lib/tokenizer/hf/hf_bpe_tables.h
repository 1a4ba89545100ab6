// The one reader of a BPE tokenizer.json's "vocab" and "merges", for both BPE tokenizers (the
// byte-level BpeTokenizer and the general hf::Bpe), so that they accept and refuse the same files
// with the same messages.
#pragma once

#include <string>
#include <vector>

#include "tokenizer/bpe_merges.h"
#include "tokenizer/hf/hf_model.h"

namespace hftrain::tokenizer::hf {

struct BpeTables {
  Vocab vocab;
  std::vector<BpeMerge> merges;  // in rank order
};

// Reads model.vocab (parse_vocab) and model.merges, each merge either ["left", "right"] or the
// older "left right" (one space; more is refused, as `tokenizers` refuses it). A merge's result
// is left + right, less right's continuing-subword prefix ("##a" + "##b" = "##ab"). Throws
// DataError naming the merge ("model.merges[3]") when a part or the result is not in the
// vocabulary.
BpeTables parse_bpe_tables(const Json& model, const Where& where,
                           const std::string& continuing_subword_prefix);

}  // namespace hftrain::tokenizer::hf
