#include "tokenizer/hf/hf_post_processor.h"

#include <limits>
#include <map>
#include <optional>
#include <string>

#include "tokenizer/hf/hf_model.h"

namespace hftrain::tokenizer::hf {
namespace {

// A template: special tokens (their ids) and the places of sequence A and B, each with its type id.
struct Item {
  int sequence = -1;  // 0: A, 1: B, -1: special tokens
  std::vector<int32_t> ids;
  int32_t type_id = 0;
};

TypedIds expand(const std::vector<Item>& items, const TypedIds& a, const TypedIds* b) {
  TypedIds out;
  for (const Item& it : items) {
    const std::vector<int32_t>* ids = it.sequence == 0   ? &a.ids
                                      : it.sequence == 1 ? (b ? &b->ids : nullptr)
                                                         : &it.ids;
    if (!ids) continue;
    out.ids.insert(out.ids.end(), ids->begin(), ids->end());
    out.type_ids.insert(out.type_ids.end(), ids->size(), it.type_id);
  }
  return out;
}

class Template : public PostProcessor {
 public:
  Template(std::vector<Item> single, std::vector<Item> pair)
      : single_(std::move(single)), pair_(std::move(pair)) {}
  TypedIds process_typed(const TypedIds& a, const TypedIds* b) const override {
    return b ? expand(pair_, a, b) : expand(single_, a, nullptr);
  }
  std::vector<int32_t> single_prefix() const override {
    std::vector<int32_t> out;
    for (const Item& it : single_) {
      if (it.sequence >= 0) break;
      out.insert(out.end(), it.ids.begin(), it.ids.end());
    }
    return out;
  }
  std::vector<int32_t> single_suffix() const override {
    std::vector<int32_t> out;
    for (auto it = single_.rbegin(); it != single_.rend() && it->sequence < 0; ++it) {
      out.insert(out.begin(), it->ids.begin(), it->ids.end());
    }
    return out;
  }

 private:
  std::vector<Item> single_, pair_;
};

// ByteLevel: ids and type ids unchanged; a pair stays two sequences until a later processor.
class PassThrough : public PostProcessor {
 public:
  TypedIds process_typed(const TypedIds& a, const TypedIds* b) const override {
    if (!b) return a;
    TypedIds out = a;
    out.ids.insert(out.ids.end(), b->ids.begin(), b->ids.end());
    out.type_ids.insert(out.type_ids.end(), b->type_ids.begin(), b->type_ids.end());
    return out;
  }
  std::vector<int32_t> single_prefix() const override { return {}; }
  std::vector<int32_t> single_suffix() const override { return {}; }
  bool passes_through() const override { return true; }
};

class Sequence : public PostProcessor {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PostProcessor>> parts) : parts_(std::move(parts)) {}
  TypedIds process_typed(const TypedIds& a, const TypedIds* b) const override {
    // As `tokenizers`: processors that pass through keep a pair apart; the first one that adds
    // tokens joins it, and the rest see one sequence.
    TypedIds out = a;
    std::optional<TypedIds> pair;
    if (b) pair = *b;
    for (const auto& p : parts_) {
      if (p->passes_through()) continue;
      out = p->process_typed(out, pair ? &*pair : nullptr);
      pair.reset();
    }
    return pair ? PassThrough().process_typed(out, &*pair) : out;
  }
  std::vector<int32_t> single_prefix() const override {
    std::vector<int32_t> out;
    for (const auto& p : parts_) {
      auto pre = p->single_prefix();
      out.insert(out.begin(), pre.begin(), pre.end());
    }
    return out;
  }
  std::vector<int32_t> single_suffix() const override {
    std::vector<int32_t> out;
    for (const auto& p : parts_) {
      auto suf = p->single_suffix();
      out.insert(out.end(), suf.begin(), suf.end());
    }
    return out;
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

// A special token's id, which must name a token of the vocabulary.
int32_t token_id(const Json& value, const Where& where, int32_t vocab_size) {
  const int64_t id = as_int(value, where, std::numeric_limits<int64_t>::min(),
                            std::numeric_limits<int64_t>::max());
  if (id < 0 || id >= vocab_size) {
    fail(where,
         "is token id " + std::to_string(id) + ", outside the vocabulary (ids 0 to " +
             std::to_string(vocab_size - 1) + ")",
         "the post-processor names a token the tokenizer does not have; fix the id, or export the "
         "tokenizer.json again");
  }
  return static_cast<int32_t>(id);
}

// ["[SEP]", 102]
int32_t token_pair_id(const Json& obj, const char* key, const Where& where, int32_t vocab_size) {
  const Json& v = get_array(obj, key, where);
  if (v.size() != 2) fail(where / key, "is not [token, id]");
  as_string(v[0], (where / key)[0]);
  return token_id(v[1], (where / key)[1], vocab_size);
}

int32_t type_id(const Json& piece, const Where& where) {
  return static_cast<int32_t>(get_int(piece, "type_id", where, 0, kMaxTokenId, 0));
}

std::vector<Item> parse_template(const Json& obj, const char* key,
                                 const std::map<std::string, std::vector<int32_t>>& specials,
                                 const Where& where) {
  std::vector<Item> out;
  const Json* list = member(obj, key, where);
  if (!list) return out;
  if (!list->is_array())
    fail(where / key, "is not a list of {\"Sequence\": ...} and {\"SpecialToken\": ...}");
  for (size_t i = 0; i < list->size(); ++i) {
    const Where at = (where / key)[i];
    const Json& piece = (*list)[i];
    if (const Json* seq = member(piece, "Sequence", at)) {
      const std::string id = get_string(*seq, "id", at / "Sequence");
      if (id != "A" && id != "B") fail(at / "Sequence" / "id", "is " + shown(id) + ", not A or B");
      out.push_back(Item{id == "A" ? 0 : 1, {}, type_id(*seq, at / "Sequence")});
    } else if (const Json* sp = member(piece, "SpecialToken", at)) {
      const std::string id = get_string(*sp, "id", at / "SpecialToken");
      auto it = specials.find(id);
      if (it == specials.end())
        fail(at / "SpecialToken" / "id", "names " + shown(id) + ", missing from special_tokens");
      out.push_back(Item{-1, it->second, type_id(*sp, at / "SpecialToken")});
    } else {
      fail(at, "is neither {\"Sequence\": ...} nor {\"SpecialToken\": ...}");
    }
  }
  return out;
}

std::unique_ptr<PostProcessor> parse_template_processing(const Json& json, const Where& where,
                                                         int32_t vocab_size) {
  std::map<std::string, std::vector<int32_t>> specials;
  if (const Json* map = member(json, "special_tokens", where)) {
    if (!map->is_object()) fail(where / "special_tokens", "is not an object");
    for (const auto& [name, value] : map->items()) {
      const Where at = where / "special_tokens" / shown(name);
      const Json& ids = get_array(value, "ids", at);
      std::vector<int32_t> list;
      for (size_t i = 0; i < ids.size(); ++i) {
        list.push_back(token_id(ids[i], (at / "ids")[i], vocab_size));
      }
      specials[name] = std::move(list);
    }
  }
  return std::make_unique<Template>(parse_template(json, "single", specials, where),
                                    parse_template(json, "pair", specials, where));
}

}  // namespace

TypedIds post_process(const PostProcessor* processor, const std::vector<int32_t>& a,
                      const std::vector<int32_t>* b) {
  const TypedIds typed_a{a, std::vector<int32_t>(a.size(), 0)};
  std::optional<TypedIds> typed_b;
  if (b) typed_b = TypedIds{*b, std::vector<int32_t>(b->size(), 1)};
  const PassThrough join;
  return (processor ? *processor : join).process_typed(typed_a, typed_b ? &*typed_b : nullptr);
}

std::vector<int32_t> PostProcessor::process(const std::vector<int32_t>& a,
                                            const std::vector<int32_t>* b) const {
  return post_process(this, a, b).ids;
}

std::unique_ptr<PostProcessor> parse_post_processor(const Json& json, const Where& where,
                                                    int32_t vocab_size) {
  if (json.is_null()) return nullptr;
  const std::string type = type_of(json, where);
  if (type == "TemplateProcessing") return parse_template_processing(json, where, vocab_size);
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    const int32_t cls = token_pair_id(json, "cls", where, vocab_size);
    const int32_t sep = token_pair_id(json, "sep", where, vocab_size);
    // `tokenizers`: BERT puts the second sequence and its [SEP] in segment 1, RoBERTa keeps 0.
    const int32_t second = type == "BertProcessing" ? 1 : 0;
    std::vector<Item> single{{-1, {cls}}, {0, {}}, {-1, {sep}}};
    std::vector<Item> pair{{-1, {cls}}, {0, {}}, {-1, {sep}}};
    if (type == "RobertaProcessing") pair.push_back({-1, {sep}});
    pair.push_back({1, {}, second});
    pair.push_back({-1, {sep}, second});
    return std::make_unique<Template>(std::move(single), std::move(pair));
  }
  if (type == "ByteLevel") return std::make_unique<PassThrough>();
  if (type == "Sequence") {
    const Json& list = get_array(json, "processors", where);
    std::vector<std::unique_ptr<PostProcessor>> parts;
    for (size_t i = 0; i < list.size(); ++i) {
      if (auto p = parse_post_processor(list[i], (where / "processors")[i], vocab_size))
        parts.push_back(std::move(p));
    }
    return std::make_unique<Sequence>(std::move(parts));
  }
  unsupported(where / "type", type,
              "the post-processors TemplateProcessing, BertProcessing, RobertaProcessing, "
              "ByteLevel and Sequence");
}

}  // namespace hftrain::tokenizer::hf
