#include "tokenizer/byte_tokenizer.h"

#include "util/error.h"
#include "util/strings.h"

namespace hftrain::tokenizer {

ByteTokenizer::ByteTokenizer(std::vector<std::string> specials) : specials_(std::move(specials)) {
  auto eot = special_id(kEndOfTextToken);
  auto pad = special_id(kPadToken);
  if (!eot || !pad) {
    throw util::ConfigError("the byte tokenizer needs the special tokens " + std::string(kEndOfTextToken) + " and " +
                            kPadToken + " (has: " + util::join(specials_, ", ") + ")");
  }
  eot_id_ = *eot;
  pad_id_ = *pad;
}

std::vector<int32_t> ByteTokenizer::encode(std::string_view text, bool allow_special) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (allow_special && text[i] == '<') {
      bool matched = false;
      for (size_t s = 0; s < specials_.size(); ++s) {
        if (text.substr(i, specials_[s].size()) == specials_[s]) {
          ids.push_back(256 + static_cast<int32_t>(s));
          i += specials_[s].size();
          matched = true;
          break;
        }
      }
      if (matched) continue;
    }
    ids.push_back(static_cast<unsigned char>(text[i]));
    ++i;
  }
  return ids;
}

std::string ByteTokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  out.reserve(ids.size());
  for (int32_t id : ids) {
    if (id >= 0 && id < 256) {
      out.push_back(static_cast<char>(id));
    } else if (id >= 256 && id < vocab_size()) {
      out += specials_[static_cast<size_t>(id - 256)];
    } else {
      throw util::DataError("token id " + std::to_string(id) + " is outside the byte tokenizer's vocabulary (size " +
                            std::to_string(vocab_size()) + ")");
    }
  }
  return out;
}

std::optional<int32_t> ByteTokenizer::special_id(std::string_view content) const {
  for (size_t s = 0; s < specials_.size(); ++s) {
    if (specials_[s] == content) return 256 + static_cast<int32_t>(s);
  }
  return std::nullopt;
}

std::string ByteTokenizer::fingerprint() const { return "byte-v1:" + util::join(specials_, "\x1f"); }

}  // namespace hftrain::tokenizer
