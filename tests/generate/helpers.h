// Shared helpers for the generation tests: tiny model specs and a small trained BPE tokenizer.
#pragma once

#include <cstdint>
#include <memory>

#include "tokenizer/bpe_tokenizer.h"
#include "model/spec.h"

namespace hftrain::test {

// GPT-2 family (learned positions, tied head), vocab 258 = the byte tokenizer's.
model::ModelSpec tiny_gpt2_spec(int64_t vocab_size = 258, int64_t max_seq_len = 32);
// Llama family (RoPE, GQA, untied head).
model::ModelSpec tiny_llama_spec(int64_t vocab_size = 300, int64_t max_seq_len = 48);

// A byte-level BPE trained on the fortune fixtures, at most `vocab_size` tokens.
std::unique_ptr<tokenizer::BpeTokenizer> fortune_bpe(int32_t vocab_size = 300);

}  // namespace hftrain::test
