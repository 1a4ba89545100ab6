// GPT-2's pre-tokenizer, the split Hugging Face's ByteLevel pre-tokenizer makes with
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// hand-written (no regex engine) so that BPE merges never cross these pieces.
#pragma once

#include <string_view>
#include <vector>

namespace hftrain::tokenizer {

// The pieces of `text`, in order; they concatenate back to `text`.
std::vector<std::string_view> gpt2_split(std::string_view text);

}  // namespace hftrain::tokenizer
