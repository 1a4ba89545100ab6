#include "data/tokenizer_json.h"

#include <nlohmann/json.hpp>

#include "data/unicode.h"
#include "util/error.h"
#include "util/fs.h"

namespace hftrain::data {
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

[[noreturn]] void unsupported(const std::string& name, const std::string& key, const std::string& what) {
  throw util::DataError("tokenizer " + name + ": " + key + " is " + what + ", which hftrain does not support",
                        "hftrain loads byte-level BPE tokenizers (a ByteLevel pre-tokenizer, alone or after a "
                        "Split regex as in Llama-3; a BPE model; no normalizer)");
}

bool is_null_or_false(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() || (it->is_boolean() && !it->get<bool>());
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
  std::vector<bool> special(model.vocab.size(), false);
  Json added = Json::array();
  for (const auto& [id, content] : model.specials) {
    special[static_cast<size_t>(id)] = true;
    added.push_back(Json{{"id", id}, {"content", content}, {"single_word", false}, {"lstrip", false},
                         {"rstrip", false}, {"normalized", false}, {"special", true}});
  }
  Json vocab = Json::object();
  for (size_t id = 0; id < model.vocab.size(); ++id) {
    if (model.vocab[id].empty()) continue;
    vocab[special[id] ? model.vocab[id] : unicode::byte_level_encode(model.vocab[id])] = id;
  }
  Json merges = Json::array();
  for (const auto& [a, b] : model.merges) {
    merges.push_back(Json::array({unicode::byte_level_encode(model.vocab[static_cast<size_t>(a)]),
                                  unicode::byte_level_encode(model.vocab[static_cast<size_t>(b)])}));
  }
  Json doc = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", nullptr},
      {"pre_tokenizer", pre_tokenizer_json(model)},
      {"post_processor", byte_level(true, false)},
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

namespace {

// ByteLevel alone, or (Llama-3 / Qwen2 style) a Sequence of a Split regex and ByteLevel.
void read_pre_tokenizer(const Json& pre, BpeModel& model, const std::string& name) {
  auto read_byte_level = [&](const Json& bl) {
    if (!bl.is_object() || bl.value("type", "") != "ByteLevel") return false;
    model.add_prefix_space = bl.value("add_prefix_space", false);
    model.byte_level_split = bl.value("use_regex", true);
    return true;
  };
  if (read_byte_level(pre)) return;
  if (pre.is_object() && pre.value("type", "") == "Sequence" && pre.contains("pretokenizers") &&
      pre["pretokenizers"].is_array() && pre["pretokenizers"].size() == 2) {
    const Json& split = pre["pretokenizers"][0];
    if (split.is_object() && split.value("type", "") == "Split" && split.contains("pattern") &&
        split["pattern"].is_object() && split["pattern"].contains("Regex") && split["pattern"]["Regex"].is_string() &&
        split.value("behavior", "") == "Isolated" && !split.value("invert", false) &&
        read_byte_level(pre["pretokenizers"][1])) {
      model.split_regex = split["pattern"]["Regex"].get<std::string>();
      return;
    }
  }
  unsupported(name, "pre_tokenizer", pre.dump());
}

}  // namespace

std::unique_ptr<BpeTokenizer> parse_tokenizer_json(const std::string& text, const std::string& name) {
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw util::DataError("tokenizer " + name + ": malformed JSON at byte " + std::to_string(e.byte),
                          "the file is damaged or not a tokenizer.json");
  }
  try {
    if (!doc.is_object() || !doc.contains("model")) {
      throw util::DataError("tokenizer " + name + " has no \"model\"", "is it a Hugging Face tokenizer.json?");
    }
    if (!is_null_or_false(doc, "normalizer")) unsupported(name, "normalizer", doc["normalizer"].dump());
    BpeModel model;
    read_pre_tokenizer(doc["pre_tokenizer"], model, name);
    const Json& m = doc["model"];
    if (m.value("type", "BPE") != "BPE") unsupported(name, "model.type", m.value("type", ""));
    for (const char* key : {"dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix"}) {
      if (!is_null_or_false(m, key)) unsupported(name, std::string("model.") + key, m[key].dump());
    }
    if (m.value("byte_fallback", false)) unsupported(name, "model.byte_fallback", "true");
    model.ignore_merges = m.value("ignore_merges", false);
    if (!m.at("vocab").is_object()) {
      throw util::DataError("tokenizer " + name + ": model.vocab is not an object of token -> id",
                            "is it a Hugging Face tokenizer.json for a BPE model?");
    }
    std::unordered_map<std::string, int32_t> by_text;
    for (const auto& [token, id_json] : m.at("vocab").items()) {
      const auto id = id_json.get<int32_t>();
      if (id < 0) throw util::DataError("tokenizer " + name + ": token '" + token + "' has a negative id");
      if (static_cast<size_t>(id) >= model.vocab.size()) model.vocab.resize(static_cast<size_t>(id) + 1);
      // A vocabulary entry outside the byte alphabet (a special token listed in the vocab) keeps its text.
      model.vocab[static_cast<size_t>(id)] = unicode::byte_level_decode(token).value_or(token);
      by_text[token] = id;
    }
    for (const auto& added : doc.value("added_tokens", Json::array())) {
      const auto id = added.at("id").get<int32_t>();
      const auto content = added.at("content").get<std::string>();
      if (id < 0) throw util::DataError("tokenizer " + name + ": added token '" + content + "' has a negative id");
      if (static_cast<size_t>(id) >= model.vocab.size()) model.vocab.resize(static_cast<size_t>(id) + 1);
      model.specials.emplace_back(id, content);
    }
    size_t rank = 0;
    for (const auto& merge : m.at("merges")) {
      std::string left;
      std::string right;
      if (merge.is_string()) {  // the older "a b" form
        const auto s = merge.get<std::string>();
        const size_t space = s.find(' ');
        if (space == std::string::npos) throw util::DataError("tokenizer " + name + ": merge '" + s + "' has no space");
        left = s.substr(0, space);
        right = s.substr(space + 1);
      } else {
        left = merge.at(0).get<std::string>();
        right = merge.at(1).get<std::string>();
      }
      auto a = by_text.find(left);
      auto b = by_text.find(right);
      if (a == by_text.end() || b == by_text.end()) {
        throw util::DataError("tokenizer " + name + ": merge " + std::to_string(rank) + " (" + left + " " + right +
                              ") names a token missing from the vocabulary");
      }
      model.merges.emplace_back(a->second, b->second);
      ++rank;
    }
    try {
      return std::make_unique<BpeTokenizer>(std::move(model));
    } catch (const util::DataError& e) {
      throw util::DataError("tokenizer " + name + ": " + e.what(), e.hint());
    }
  } catch (const nlohmann::json::exception& e) {
    throw util::DataError("tokenizer " + name + ": unexpected structure (" + std::string(e.what()) + ")",
                          "is it a Hugging Face tokenizer.json for a BPE model?");
  }
}

std::unique_ptr<BpeTokenizer> load_tokenizer_json(const std::filesystem::path& path) {
  return parse_tokenizer_json(util::read_file<util::DataError>(path, "tokenizer", size_t{1} << 30), path.string());
}

}  // namespace hftrain::data
