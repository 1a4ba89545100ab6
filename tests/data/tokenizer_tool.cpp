// A small driver for tests/conformance/data_tokenizers_roundtrip.py, which compares hftrain's
// tokenizers with the Python `tokenizers` library:
//   hftrain_tokenizer_tool train <corpus.txt> <vocab_size> <out/tokenizer.json>
//   hftrain_tokenizer_tool encode <tokenizer.json> <texts.json>   (prints [[ids...], ...] as JSON)
//   hftrain_tokenizer_tool copy <tokenizer.json> <out.json>       (loads, then saves hftrain's copy)
#include <iostream>
#include <nlohmann/json.hpp>

#include "data/bpe_trainer.h"
#include "data/tokenizer_json.h"
#include "util/error.h"
#include "util/fs.h"

using namespace hftrain;

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() == 4 && args[0] == "train") {
      data::BpeTrainer trainer({.vocab_size = std::stoi(args[2]), .min_frequency = 2});
      trainer.add_text(util::read_file<util::DataError>(args[1], "corpus"));
      data::save_tokenizer_json(trainer.train(), args[3]);
      return 0;
    }
    if (args.size() == 3 && args[0] == "encode") {
      auto tok = data::load_tokenizer_json(args[1]);
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
      data::save_tokenizer_json(*data::load_tokenizer_json(args[1]), args[2]);
      return 0;
    }
    std::cerr << "usage: hftrain_tokenizer_tool train <corpus> <vocab_size> <out.json> | encode <tokenizer.json> <texts.json> | copy <in.json> <out.json>\n";
    return 2;
  } catch (const util::Error& e) {
    std::cerr << e.describe() << "\n";
    return e.exit_code();
  }
}
