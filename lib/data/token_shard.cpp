#include "data/token_shard.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "util/error.h"

namespace hftrain::data {
namespace {

constexpr int32_t kLlmcMagic16 = 20240520;
constexpr int32_t kLlmcMagic32 = 20240801;
constexpr size_t kLlmcHeaderBytes = 256 * sizeof(int32_t);
constexpr uint64_t kCheckedAtOpen = uint64_t{1} << 20;  // tokens checked against the vocabulary at open

}  // namespace

std::shared_ptr<TokenCorpus> open_token_shard(const std::filesystem::path& file, TokenDtype dtype,
                                              int64_t vocab_size) {
  auto map = std::make_shared<const MappedFile>(file, "token shard");
  const std::string name = file.string();
  size_t offset = 0;
  int width = dtype == TokenDtype::kUint16 ? 2 : 4;
  int64_t header_count = -1;
  if (map->size() >= kLlmcHeaderBytes) {
    int32_t header[3];
    std::memcpy(header, map->data(), sizeof(header));
    if (header[0] == kLlmcMagic16 || header[0] == kLlmcMagic32) {
      width = header[0] == kLlmcMagic16 ? 2 : 4;
      header_count = header[2];
      offset = kLlmcHeaderBytes;
    }
  }
  const size_t bytes = map->size() - offset;
  if (bytes == 0) {
    throw util::DataError("token shard " + name + " holds no tokens", "remove it or exclude it from the source");
  }
  if (bytes % static_cast<size_t>(width) != 0) {
    throw util::DataError("token shard " + name + " is " + std::to_string(map->size()) +
                              " bytes, not a whole number of " + std::to_string(width * 8) + "-bit tokens",
                          "check the source's dtype (uint16 or uint32), or whether the file is a token shard");
  }
  const uint64_t count = bytes / static_cast<size_t>(width);
  if (header_count >= 0 && static_cast<uint64_t>(header_count) != count) {
    throw util::DataError("token shard " + name + ": its header says " + std::to_string(header_count) +
                              " tokens, the file holds " + std::to_string(count),
                          "the shard is truncated or damaged; regenerate it");
  }
  const uint8_t* tokens = map->data() + offset;
  auto corpus = std::make_shared<TokenCorpus>(map, tokens, width, count, nullptr, std::span<const uint64_t>{}, name);
  // The head of the shard is checked now, so that a wrong dtype or tokenizer fails at start; the
  // rest as it is read (reading a 100 GB folder of shards up front would take minutes).
  const uint64_t head = std::min<uint64_t>(count, kCheckedAtOpen);
  for (uint64_t i = 0; i < head; ++i) {
    if (static_cast<int64_t>(corpus->token(i)) >= vocab_size) {
      throw util::DataError("token shard " + name + ": token " + std::to_string(i) + " has id " +
                                std::to_string(corpus->token(i)) + ", outside the tokenizer's vocabulary of " +
                                std::to_string(vocab_size),
                            "the shard was made with another tokenizer, or its dtype is wrong");
    }
  }
  if (head < count) corpus->set_id_limit(static_cast<uint32_t>(std::min<int64_t>(vocab_size, UINT32_MAX)));
  return corpus;
}

}  // namespace hftrain::data
