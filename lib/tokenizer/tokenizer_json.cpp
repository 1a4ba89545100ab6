#include "tokenizer/tokenizer_json.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "tokenizer/hf/hf_added_tokens.h"
#include "tokenizer/hf/hf_bpe_tables.h"
#include "tokenizer/hf/hf_post_processor.h"
#include "tokenizer/hf/hf_tokenizer.h"
#include "tokenizer/unicode.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_depth.h"

namespace hftrain::tokenizer {
namespace {

using Json = nlohmann::ordered_json;

Json byte_level(bool add_prefix_space, bool trim_offsets, bool use_regex = true) {
  return Json{{"type", "ByteLevel"}, {"add_prefix_space", add_prefix_space}, {"trim_offsets", trim_offsets},
              {"use_regex", use_regex}};
}

Json pre_tokenizer_json(const BpeModel& model) {
  const Json bl = byte_level(model.add_prefix_space, true, model.byte_level_split);
  if (model.split_regex.empty()) return bl;
  const Json split{{"type", "Split"}, {"pattern", {{"Regex", model.split_regex}}}, {"behavior", "Isolated"},
                   {"invert", false}};
  return Json{{"type", "Sequence"}, {"pretokenizers", Json::array({split, bl})}};
}

// ByteLevel (nothing around a sequence), or a template with the special tokens a loaded file put
// before and after it (Llama-3: "<|begin_of_text|> $A"); `spelled` has each token as the file
// spells it.
Json post_processor_json(const BpeModel& model, const std::vector<std::string>& spelled) {
  if (model.post_prefix.empty() && model.post_suffix.empty()) return byte_level(true, false);
  Json single = Json::array();
  Json specials = Json::object();
  auto add_special = [&](int32_t id) {
    const std::string& token = spelled[static_cast<size_t>(id)];
    single.push_back(Json{{"SpecialToken", {{"id", token}, {"type_id", 0}}}});
    specials[token] = Json{{"id", token}, {"ids", Json::array({id})}, {"tokens", Json::array({token})}};
  };
  for (int32_t id : model.post_prefix) add_special(id);
  single.push_back(Json{{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  for (int32_t id : model.post_suffix) add_special(id);
  Json pair = single;
  for (const Json& item : single) {
    Json copy = item;
    if (copy.contains("Sequence")) copy["Sequence"] = Json{{"id", "B"}, {"type_id", 1}};
    pair.push_back(copy);
  }
  return Json{{"type", "TemplateProcessing"}, {"single", single}, {"pair", pair}, {"special_tokens", specials}};
}

// Each token as tokenizer.json spells it: special tokens as they are, the others' bytes in the
// byte-level alphabet; "" for a gap.
std::vector<std::string> spelled_tokens(const BpeModel& model) {
  std::vector<std::string> out(model.vocab.size());
  for (size_t id = 0; id < model.vocab.size(); ++id) {
    if (!model.vocab[id].empty()) out[id] = unicode::byte_level_encode(model.vocab[id]);
  }
  for (const auto& [id, content] : model.specials) out[static_cast<size_t>(id)] = content;
  return out;
}

}  // namespace

BpeModel byte_tokenizer_model(const ByteTokenizer& tokenizer) {
  BpeModel model;
  for (int b = 0; b < 256; ++b) model.vocab.emplace_back(1, static_cast<char>(b));
  for (const auto& content : tokenizer.specials()) {
    model.specials.emplace_back(static_cast<int32_t>(model.vocab.size()), content);
    model.vocab.push_back(content);
  }
  return model;
}

std::string tokenizer_json_text(const BpeTokenizer& tokenizer) {
  const BpeModel& model = tokenizer.model();
  const std::vector<std::string> spelled = spelled_tokens(model);
  Json added = Json::array();
  for (const auto& [id, content] : model.specials) {
    added.push_back(Json{{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
                         {"rstrip", false}, {"normalized", false}, {"special", true}});
  }
  Json vocab = Json::object();
  for (size_t id = 0; id < spelled.size(); ++id) {
    if (!spelled[id].empty()) vocab[spelled[id]] = id;
  }
  Json merges = Json::array();
  for (const BpeMerge& m : model.merges) {
    merges.push_back(
        Json::array({spelled[static_cast<size_t>(m.left)], spelled[static_cast<size_t>(m.right)]}));
  }
  Json doc = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer", pre_tokenizer_json(model)},
      {"post_processor", post_processor_json(model, spelled)},
      {"decoder", byte_level(true, true)},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false},
        {"ignore_merges", model.ignore_merges}, {"vocab", vocab}, {"merges", merges}}},
  };
  return doc.dump(2) + "\n";
}

void save_tokenizer_json(const BpeTokenizer& tokenizer, const std::filesystem::path& path) {
  util::atomic_write_file(path, tokenizer_json_text(tokenizer));
}

std::string tokenizer_json_text(const Tokenizer& tokenizer) {
  if (const auto* bpe = dynamic_cast<const BpeTokenizer*>(&tokenizer)) return tokenizer_json_text(*bpe);
  if (const auto* hf = dynamic_cast<const HfTokenizer*>(&tokenizer)) return hf->json_text();
  if (const auto* byte = dynamic_cast<const ByteTokenizer*>(&tokenizer)) {
    return tokenizer_json_text(BpeTokenizer(byte_tokenizer_model(*byte)));
  }
  throw util::UsageError("this tokenizer has no tokenizer.json form");
}

void save_tokenizer_json(const Tokenizer& tokenizer, const std::filesystem::path& path) {
  util::atomic_write_file(path, tokenizer_json_text(tokenizer));
}

namespace {

using InJson = hf::Json;

bool null_or(const InJson& obj, const char* key, bool value) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() || (it->is_boolean() && it->get<bool>() == value);
}

bool null_or_empty(const InJson& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() || (it->is_string() && it->get<std::string>().empty());
}

bool byte_level_without_prefix(const InJson& j) {
  return j.is_object() && j.value("type", "") == "ByteLevel" && null_or(j, "add_prefix_space", false);
}

// True when every token of `vocab` is byte-level text or an added token. BpeTokenizer finds
// tokens by their bytes; a token spelled outside the byte-level alphabet (a raw " " beside "Ġ")
// could share its bytes with another, which `tokenizers` keeps apart by their text.
bool byte_level_spelling(const InJson& vocab, const InJson& added) {
  if (!vocab.is_object()) return true;  // the parser says what is wrong
  std::unordered_set<std::string> contents;
  for (const InJson& t : added) contents.insert(t["content"].get<std::string>());
  for (const auto& [token, id] : vocab.items()) {
    if (token.empty() || (!unicode::byte_level_decode(token) && !contents.count(token)))
      return false;
  }
  return true;
}

// The byte-level BPE files BpeTokenizer runs exactly as `tokenizers` does: no normalizer; a
// ByteLevel pre-tokenizer without a prefix space, alone or after a Split regex ("Isolated"); a
// BPE model without unk token, subword affixes, byte fallback or dropout; a ByteLevel decoder;
// added tokens that are all special, without strip or single-word options, at the ids the
// vocabulary gives them; tokens spelled in the byte-level alphabet. Anything else goes to
// HfTokenizer.
bool is_plain_byte_level(const InJson& doc) {
  static const InJson kNull;
  auto get = [](const InJson& obj, const char* key) -> const InJson& {
    if (!obj.is_object()) return kNull;
    auto it = obj.find(key);
    return it == obj.end() ? kNull : *it;
  };
  if (!doc.is_object() || !null_or(doc, "normalizer", false)) return false;
  const InJson& pre = get(doc, "pre_tokenizer");
  bool pre_ok = byte_level_without_prefix(pre);
  if (!pre_ok && pre.is_object() && pre.value("type", "") == "Sequence") {
    const InJson& list = get(pre, "pretokenizers");
    if (list.is_array() && list.size() == 2 && list[0].is_object() && byte_level_without_prefix(list[1])) {
      const InJson& split = list[0];
      const InJson& regex = get(get(split, "pattern"), "Regex");
      pre_ok = split.value("type", "") == "Split" && regex.is_string() && split.value("behavior", "") == "Isolated" &&
               null_or(split, "invert", false);
    }
  }
  if (!pre_ok) return false;
  const InJson& model = get(doc, "model");
  if (!model.is_object() || model.value("type", "BPE") != "BPE" || !model.contains("merges")) return false;
  const InJson& dropout = get(model, "dropout");
  if (!(dropout.is_null() || (dropout.is_number() && dropout.get<double>() == 0.0))) return false;
  if (!get(model, "unk_token").is_null() || !null_or_empty(model, "continuing_subword_prefix") ||
      !null_or_empty(model, "end_of_word_suffix") || !null_or(model, "byte_fallback", false)) {
    return false;
  }
  const InJson& decoder = get(doc, "decoder");
  if (!decoder.is_null() && !(decoder.is_object() && decoder.value("type", "") == "ByteLevel")) return false;
  const InJson& added = get(doc, "added_tokens");
  if (!added.is_null() && !added.is_array()) return false;
  const InJson& vocab = get(model, "vocab");
  for (const InJson& t : added) {
    if (!t.is_object() || !get(t, "content").is_string() || !get(t, "special").is_boolean() ||
        !null_or(t, "special", true) || !null_or(t, "lstrip", false) || !null_or(t, "rstrip", false) ||
        !null_or(t, "single_word", false)) {
      return false;
    }
    if (vocab.is_object()) {  // tokenizers gives a token the vocabulary has the vocabulary's id
      auto it = vocab.find(t["content"].get<std::string>());
      if (it != vocab.end() && *it != get(t, "id")) return false;
    }
  }
  return byte_level_spelling(vocab, added);
}

// nullptr when an added token shares its id with a model token of other text: `tokenizers` numbers
// an added token the vocabulary lacks after the vocabulary's count, which in a vocabulary with
// gaps can be a model token's id. BpeModel holds one text per id; HfTokenizer runs such a file.
std::unique_ptr<BpeTokenizer> parse_byte_level(const InJson& doc, const std::string& name,
                                               const SpecialTokenChoice& choice) {
  const std::string label = "tokenizer " + name;
  const hf::Where top = hf::top_of(label);
  BpeModel model;
  const InJson& pre = doc["pre_tokenizer"];
  const InJson& bl = pre.value("type", "") == "Sequence" ? pre["pretokenizers"][1] : pre;
  model.byte_level_split = hf::get_bool(bl, "use_regex", top / "pre_tokenizer", true);
  if (pre.value("type", "") == "Sequence") {
    model.split_regex = pre["pretokenizers"][0]["pattern"]["Regex"].get<std::string>();
    model.split_regex_source = name + ": pre_tokenizer.pretokenizers[0].pattern.Regex";
  }
  const InJson& m = doc["model"];
  model.ignore_merges = hf::get_bool(m, "ignore_merges", top / "model", false);
  // The vocabulary, merges and added tokens as HfTokenizer reads them, so that both accept, refuse
  // and number the same files.
  hf::BpeTables tables = hf::parse_bpe_tables(m, top / "model", "");
  const hf::AddedVocabulary added(
      hf::parse_added_tokens(hf::member(doc, "added_tokens", top), top / "added_tokens"),
      tables.vocab, nullptr);
  for (const hf::AddedToken& t : added.tokens()) {
    const auto id = static_cast<size_t>(t.id);
    if (id < tables.vocab.tokens.size() && tables.vocab.present[id] &&
        tables.vocab.tokens[id] != t.content) {
      return nullptr;
    }
  }
  const int32_t vocab_size = hf::vocab_size(added, tables.vocab, top);
  model.vocab.resize(static_cast<size_t>(vocab_size));
  for (size_t id = 0; id < tables.vocab.tokens.size(); ++id) {
    // Every token is byte-level text or an added token (is_plain_byte_level), which keeps its text.
    const std::string& token = tables.vocab.tokens[id];
    if (tables.vocab.present[id])
      model.vocab[id] = unicode::byte_level_decode(token).value_or(token);
  }
  for (const hf::AddedToken& t : added.tokens()) model.specials.emplace_back(t.id, t.content);
  model.merges = std::move(tables.merges);
  // The post-processor's special tokens around a sequence (encode_with_special_tokens).
  const std::unique_ptr<hf::PostProcessor> post = hf::parse_post_processor(
      doc.value("post_processor", InJson()), top / "post_processor", vocab_size);
  if (post) {
    model.post_prefix = post->single_prefix();
    model.post_suffix = post->single_suffix();
  }
  // The end-of-text and padding tokens, named in the model only where BpeTokenizer's own choice
  // (<|endoftext|>, and <|pad|> or else that) differs, so that older files keep their fingerprints.
  const SpecialCandidates c = hf::special_candidates(doc, top, added, tables.vocab, post.get());
  const SpecialIds ids = choose_special_ids(choice, c, name);
  auto content_of = [&](int32_t id) {
    const hf::AddedToken* t = added.by_id(id);
    return t ? t->content : model.vocab[static_cast<size_t>(id)];
  };
  if (ids.eot != c.id_of(std::string(kEndOfTextToken))) model.eos_token = content_of(ids.eot);
  const int32_t default_pad = added.id_of(std::string(kPadToken)).value_or(ids.eot);
  if (!model.eos_token.empty() || ids.pad != default_pad) model.pad_token = content_of(ids.pad);
  try {
    return std::make_unique<BpeTokenizer>(std::move(model));
  } catch (const util::DataError& e) {
    throw util::DataError("tokenizer " + name + ": " + e.what(), e.hint());
  }
}

}  // namespace

std::unique_ptr<Tokenizer> parse_tokenizer_json(const std::string& text, const std::string& name,
                                                const SpecialTokenChoice& choice) {
  util::check_json_depth<util::DataError>(text, name);
  InJson doc;
  try {
    doc = InJson::parse(text);
  } catch (const InJson::parse_error& e) {
    throw util::DataError("tokenizer " + name + ": malformed JSON at byte " + std::to_string(e.byte),
                          "the file is damaged or not a tokenizer.json");
  } catch (const InJson::exception&) {
    throw util::DataError("tokenizer " + name + ": malformed JSON", "the file is damaged or not a tokenizer.json");
  }
  if (!doc.is_object() || !doc.contains("model")) {
    throw util::DataError("tokenizer " + name + " has no \"model\"", "is it a Hugging Face tokenizer.json?");
  }
  try {
    if (is_plain_byte_level(doc)) {
      if (auto bpe = parse_byte_level(doc, name, choice)) return bpe;
    }
    return std::make_unique<HfTokenizer>(doc, text, name, choice);
  } catch (const InJson::exception&) {
    // Every access checks its types; this is a last line of defence, with no library text.
    throw util::DataError("tokenizer " + name + ": unexpected structure",
                          "is it a Hugging Face tokenizer.json written by the tokenizers library?");
  }
}

std::unique_ptr<Tokenizer> load_tokenizer_json(const std::filesystem::path& path, SpecialTokenChoice choice) {
  const std::string text = util::read_file<util::DataError>(path, "tokenizer", size_t{1} << 30);
  read_tokenizer_config(path.parent_path() / "tokenizer_config.json", choice);
  return parse_tokenizer_json(text, path.string(), choice);
}

}  // namespace hftrain::tokenizer
