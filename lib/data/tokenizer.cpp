#include "data/tokenizer.h"

#include "data/byte_tokenizer.h"
#include "data/tokenizer_json.h"
#include "util/error.h"

namespace hftrain::data {

std::unique_ptr<Tokenizer> make_tokenizer(const TokenizerOptions& options) {
  switch (options.kind) {
    case TokenizerKind::kByte:
      return std::make_unique<ByteTokenizer>();
    case TokenizerKind::kBpe:
      if (options.path.empty()) {
        throw util::ConfigError("the bpe tokenizer needs a tokenizer.json path",
                                "set tokenizer.path, or train one first");
      }
      return load_tokenizer_json(options.path);
  }
  throw util::ConfigError("unknown tokenizer kind");
}

}  // namespace hftrain::data
