// A small driver for the conformance tests that compare hftrain's tokenizers with the Python
// `tokenizers` library (tests/conformance/tokenizer_roundtrip.py, tokenizer_hf_tokenizers.py):
//   hftrain_tokenizer_tool train <corpus.txt> <vocab_size> <out/tokenizer.json>
//   hftrain_tokenizer_tool encode <tokenizer.json> <texts.json>   (prints [[ids...], ...] as JSON;
//                                                                  fails unless decode(encode(x))
//                                                                  == x)
//   hftrain_tokenizer_tool copy <tokenizer.json> <out.json>       (loads, then saves hftrain's
//   copy) hftrain_tokenizer_tool inspect <tokenizer.json> <texts.json>  (prints, per text,
//   everything the
//       tokenizer makes of it: ids with and without special-token handling and post-processing,
//       decodings, and for HfTokenizer the normalized text and the pre-tokenized pieces)
#include <iostream>
#include <nlohmann/json.hpp>

#include "tokenizer/bpe_trainer.h"
#include "tokenizer/hf/hf_tokenizer.h"
#include "tokenizer/tokenizer_json.h"
#include "util/error.h"
#include "util/fs.h"

using namespace hftrain;

namespace {

// JSON strings must be valid UTF-8; decoded text that is not (a cut character) is shown lossily.
std::string printable(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

int inspect(const std::string& tokenizer_path, const std::string& texts_path) {
  auto tok = tokenizer::load_tokenizer_json(tokenizer_path);
  const auto* hf = dynamic_cast<const tokenizer::HfTokenizer*>(tok.get());
  auto texts = nlohmann::json::parse(util::read_file<util::DataError>(texts_path, "texts"));
  std::cout << "{\"class\": \"" << (hf ? "hf" : "bpe") << "\", \"eot\": " << tok->eot_id()
            << ", \"pad\": " << tok->pad_id() << ", \"vocab_size\": " << tok->vocab_size()
            << ", \"texts\": [\n";
  for (size_t i = 0; i < texts.size(); ++i) {
    const auto text = texts[i].get<std::string>();
    const auto ids = tok->encode(text, /*allow_special=*/true);
    const auto plain = tok->encode(text, /*allow_special=*/false);
    const auto with_special = tok->encode_with_special_tokens(text);
    std::cout << (i ? ",\n" : "") << "{\"ids\": " << nlohmann::json(ids).dump()
              << ", \"plain\": " << nlohmann::json(plain).dump()
              << ", \"with_special\": " << nlohmann::json(with_special).dump()
              << ", \"decoded\": " << printable(tok->decode(ids))
              << ", \"decoded_plain\": " << printable(tok->decode(plain))
              << ", \"decoded_skip\": " << printable(tok->decode_without_special(with_special));
    if (hf) {
      std::cout << ", \"normalized\": " << printable(hf->normalized(text))
                << ", \"pre_tokenized\": "
                << nlohmann::json(hf->pre_tokenized(hf->normalized(text)))
                       .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    std::cout << "}";
  }
  std::cout << "\n]}\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() == 4 && args[0] == "train") {
      tokenizer::BpeTrainer trainer({.vocab_size = std::stoi(args[2]), .min_frequency = 2});
      trainer.add_text(util::read_file<util::DataError>(args[1], "corpus"));
      tokenizer::save_tokenizer_json(trainer.train(), args[3]);
      return 0;
    }
    if (args.size() == 3 && args[0] == "encode") {
      auto tok = tokenizer::load_tokenizer_json(args[1]);
      auto texts = nlohmann::json::parse(util::read_file<util::DataError>(args[2], "texts"));
      nlohmann::json out = nlohmann::json::array();
      for (const auto& text : texts) {
        auto ids = tok->encode(text.get<std::string>(), /*allow_special=*/true);
        if (tok->decode(ids) != text.get<std::string>()) {
          std::cerr << "decode(encode(x)) != x for " << text << "\n";
          return 1;
        }
        out.push_back(ids);
      }
      std::cout << out.dump() << "\n";
      return 0;
    }
    if (args.size() == 3 && args[0] == "copy") {
      tokenizer::save_tokenizer_json(*tokenizer::load_tokenizer_json(args[1]), args[2]);
      return 0;
    }
    if (args.size() == 3 && args[0] == "inspect") return inspect(args[1], args[2]);
    std::cerr
        << "usage: hftrain_tokenizer_tool train <corpus> <vocab_size> <out.json> | encode "
           "<tokenizer.json> "
           "<texts.json> | copy <in.json> <out.json> | inspect <tokenizer.json> <texts.json>\n";
    return 2;
  } catch (const util::Error& e) {
    std::cerr << e.describe() << "\n";
    return e.exit_code();
  }
}
