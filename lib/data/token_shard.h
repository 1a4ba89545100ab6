// Pre-tokenized binary token shards, memory-mapped: raw little-endian uint16/uint32 arrays, or
// llm.c's format (a 256 x int32 header: magic 20240520 for uint16 tokens, 20240801 for uint32,
// version, token count; then the tokens). A shard is one token stream; documents inside it are
// already separated by the end-of-text token, so it is one "document" to the packer.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>

#include "data/source.h"
#include "data/token_corpus.h"

namespace hftrain::data {

// Maps and checks a shard: a size that is not a whole number of tokens, an empty shard, a header
// whose token count disagrees with the size, or a token id >= vocab_size gives a DataError naming
// the file and the token index.
std::shared_ptr<TokenCorpus> open_token_shard(const std::filesystem::path& file, TokenDtype dtype,
                                              int64_t vocab_size);

}  // namespace hftrain::data
