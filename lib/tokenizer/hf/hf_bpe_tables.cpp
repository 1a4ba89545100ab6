#include "tokenizer/hf/hf_bpe_tables.h"

#include <utility>

namespace hftrain::tokenizer::hf {
namespace {

std::pair<std::string, std::string> merge_parts(const Json& m, const Where& at) {
  if (m.is_string()) {  // the older "left right" form
    const std::string s = m.get<std::string>();
    const size_t space = s.find(' ');
    if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
      fail(at, "is " + shown(s) + ", not two tokens separated by one space");
    }
    return {s.substr(0, space), s.substr(space + 1)};
  }
  if (m.is_array() && m.size() == 2) return {as_string(m[0], at[0]), as_string(m[1], at[1])};
  fail(at, "is neither \"left right\" nor [\"left\", \"right\"]");
}

}  // namespace

BpeTables parse_bpe_tables(const Json& model, const Where& where,
                           const std::string& continuing_subword_prefix) {
  BpeTables t;
  t.vocab = parse_vocab(get_object(model, "vocab", where), where / "vocab");
  const Json* list = member(model, "merges", where);
  if (!list) return t;
  if (!list->is_array()) fail(where / "merges", "is not an array");
  const size_t prefix = continuing_subword_prefix.size();
  t.merges.reserve(list->size());
  for (size_t rank = 0; rank < list->size(); ++rank) {
    const Where at = (where / "merges")[rank];
    const auto [left, right] = merge_parts((*list)[rank], at);
    const auto a = t.vocab.find(left);
    const auto b = t.vocab.find(right);
    const bool strip = prefix > 0 && right.compare(0, prefix, continuing_subword_prefix) == 0;
    const auto merged = t.vocab.find(left + (strip ? right.substr(prefix) : right));
    if (!a || !b || !merged) {
      const std::string missing = !a ? shown(left) : !b ? shown(right) : "the result";
      fail(at, "merges " + shown(left) + " and " + shown(right) + ", but " + missing +
                   " is not in model.vocab");
    }
    t.merges.push_back(BpeMerge{*a, *b, *merged});
  }
  return t;
}

}  // namespace hftrain::tokenizer::hf
