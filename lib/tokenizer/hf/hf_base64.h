// Base64 as the `tokenizers` library reads a Precompiled normalizer's precompiled_charsmap (the
// Rust crate base64 0.13, standard alphabet): '=' padding may be left out but not overdone, no
// whitespace, and the unused bits of the last character must be zero.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hftrain::tokenizer::hf {

// The decoded bytes, or nullopt with `why` saying what is wrong.
std::optional<std::string> decode_base64(std::string_view text, std::string& why);

}  // namespace hftrain::tokenizer::hf
