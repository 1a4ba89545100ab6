#include "tokenizer/hf/hf_base64.h"

#include <cstdint>

namespace hftrain::tokenizer::hf {
namespace {

int value_of(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::optional<std::string> decode_base64(std::string_view text, std::string& why) {
  size_t data = text.size();
  while (data > 0 && text[data - 1] == '=') --data;
  const size_t padding = text.size() - data;
  for (size_t i = 0; i < data; ++i) {
    if (value_of(text[i]) < 0) {
      why = "has a character that is not base64 at offset " + std::to_string(i);
      return std::nullopt;
    }
  }
  // 4 characters make 3 bytes; a last group of 1 character would hold only 6 bits.
  if (data % 4 == 1 || padding > (4 - data % 4) % 4) {
    why = "is not base64 (its length or '=' padding is wrong)";
    return std::nullopt;
  }
  std::string out;
  out.reserve(data / 4 * 3 + 2);
  uint32_t bits = 0;
  int count = 0;
  for (size_t i = 0; i < data; ++i) {
    bits = (bits << 6) | static_cast<uint32_t>(value_of(text[i]));
    if (++count == 4) {
      out.push_back(static_cast<char>(bits >> 16));
      out.push_back(static_cast<char>(bits >> 8));
      out.push_back(static_cast<char>(bits));
      bits = 0;
      count = 0;
    }
  }
  if (count > 0) {
    const int spare = count == 2 ? 4 : 2;  // bits of the last character that hold no byte
    if ((bits & ((1u << spare) - 1)) != 0) {
      why = "is not base64 (its last character has stray bits)";
      return std::nullopt;
    }
    bits >>= spare;
    if (count == 3) out.push_back(static_cast<char>(bits >> 8));
    out.push_back(static_cast<char>(bits));
  }
  return out;
}

}  // namespace hftrain::tokenizer::hf
