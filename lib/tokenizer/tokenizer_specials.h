// Which token of a loaded tokenizer.json ends documents (eot) and which fills padding (pad).
// Training appends the end-of-text token to every document, so every tokenizer needs one; Hugging
// Face files name it in different ways, tried in this order:
//   1. an explicit choice (TokenizerOptions::eos_token / pad_token);
//   2. tokenizer_config.json next to tokenizer.json: "eos_token", "pad_token";
//   3. eos: the special token the post-processor puts after a sequence ("[CLS] $A [SEP]": [SEP]);
//      pad: the "padding" section of tokenizer.json;
//   4. a special added token with a well-known name: <|endoftext|> (GPT-2, Qwen), <|end_of_text|>
//      (Llama-3), </s> (Llama-2, Mistral, T5), <eos> (Gemma), [SEP] (BERT); pad: <|pad|>, [PAD],
//      <pad>;
//   5. eos: a DataError that says how to name one; pad: the eot token.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace hftrain::tokenizer {

struct SpecialTokenChoice {
  std::string eos_token;  // explicit choices; empty: automatic
  std::string pad_token;
  std::optional<std::string> config_eos;  // from tokenizer_config.json
  std::optional<std::string> config_pad;
  std::string config_file;  // the tokenizer_config.json they came from, for messages
};

// Fills config_eos / config_pad from `file` ("eos_token": "</s>" or {"content": "</s>", ...})
// when it exists. Throws DataError naming the file when it is not valid JSON.
void read_tokenizer_config(const std::filesystem::path& file, SpecialTokenChoice& choice);

// What a tokenizer offers to choose from.
struct SpecialCandidates {
  std::function<std::optional<int32_t>(const std::string&)> id_of;  // any token of the vocabulary
  std::vector<std::string> specials;          // special added tokens' contents, by id
  std::optional<int32_t> post_processor_eos;  // last special token after the sequence
  std::optional<std::string> padding_token;   // tokenizer.json "padding": {"pad_token": ...}
};

struct SpecialIds {
  int32_t eot;
  int32_t pad;
  std::string
      eot_token;  // the eot token's text, as chosen ("" when it came from the post-processor)
};

// Throws DataError naming `name` (the tokenizer.json) when no end-of-text token can be found or
// an explicit / configured token is not in the vocabulary.
SpecialIds choose_special_ids(const SpecialTokenChoice& choice, const SpecialCandidates& candidates,
                              const std::string& name);

}  // namespace hftrain::tokenizer
