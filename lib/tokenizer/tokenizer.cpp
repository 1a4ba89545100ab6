#include "tokenizer/tokenizer.h"

#include "tokenizer/byte_tokenizer.h"
#include "tokenizer/tokenizer_json.h"
#include "util/error.h"

namespace hftrain::tokenizer {

std::unique_ptr<Tokenizer> make_tokenizer(const TokenizerOptions& options) {
  switch (options.kind) {
    case TokenizerKind::kByte:
      return std::make_unique<ByteTokenizer>();
    case TokenizerKind::kBpe: {
      if (options.path.empty()) {
        throw util::ConfigError("the bpe tokenizer needs a tokenizer.json path",
                                "set tokenizer.path, or train one first");
      }
      SpecialTokenChoice choice;
      choice.eos_token = options.eos_token;
      choice.pad_token = options.pad_token;
      return load_tokenizer_json(options.path, choice);
    }
  }
  throw util::ConfigError("unknown tokenizer kind");
}

std::string Tokenizer::decode_without_special(std::span<const int32_t> ids) const {
  std::vector<int32_t> kept;
  kept.reserve(ids.size());
  for (int32_t id : ids) {
    if (id != eot_id() && id != pad_id()) kept.push_back(id);
  }
  return decode(kept);
}

}  // namespace hftrain::tokenizer
