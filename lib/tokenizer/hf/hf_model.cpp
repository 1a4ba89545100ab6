#include "tokenizer/hf/hf_model.h"

#include "tokenizer/hf/hf_bpe.h"
#include "tokenizer/hf/hf_unigram.h"
#include "tokenizer/hf/hf_wordpiece.h"

namespace hftrain::tokenizer::hf {

Vocab parse_vocab(const Json& obj, const Where& where) {
  if (!obj.is_object()) fail(where, "is not an object of token -> id");
  Vocab v;
  v.ids.reserve(obj.size());
  for (const auto& [token, id_json] : obj.items()) {
    const auto id = static_cast<int32_t>(as_int(id_json, where / shown(token), 0, kMaxTokenId));
    if (static_cast<size_t>(id) >= v.tokens.size()) {
      v.tokens.resize(static_cast<size_t>(id) + 1);
      v.present.resize(static_cast<size_t>(id) + 1, false);
    }
    if (v.present[static_cast<size_t>(id)]) {
      fail(where, "gives id " + std::to_string(id) + " to both " +
                      shown(v.tokens[static_cast<size_t>(id)]) + " and " + shown(token));
    }
    v.present[static_cast<size_t>(id)] = true;
    v.tokens[static_cast<size_t>(id)] = token;
    v.ids.emplace(token, id);
  }
  return v;
}

std::unique_ptr<Model> parse_model(const Json& json, const Where& where) {
  if (!json.is_object())
    fail(where, "is missing or not an object", "is it a Hugging Face tokenizer.json?");
  // Files from before "type" was written are BPE when they have merges (as tokenizers reads them).
  const std::string type = member(json, "type", where)                       ? type_of(json, where)
                           : member(json, "merges", where)                   ? "BPE"
                           : member(json, "max_input_chars_per_word", where) ? "WordPiece"
                                                                             : "WordLevel";
  if (type == "BPE") return parse_bpe(json, where);
  if (type == "WordPiece") return parse_wordpiece(json, where);
  if (type == "WordLevel") return parse_wordlevel(json, where);
  if (type == "Unigram") return parse_unigram(json, where);
  unsupported(where / "type", type, "the models BPE, WordPiece, WordLevel and Unigram");
}

}  // namespace hftrain::tokenizer::hf
