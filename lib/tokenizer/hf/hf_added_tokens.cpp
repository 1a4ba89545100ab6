#include "tokenizer/hf/hf_added_tokens.h"

#include <algorithm>
#include <unordered_set>

#include "tokenizer/unicode.h"

namespace hftrain::tokenizer::hf {
namespace {

// Two entries that are the same token, options included (the second is ignored).
std::string identity(const AddedToken& t) {
  return t.content + '\0' + static_cast<char>('0' + t.single_word) +
         static_cast<char>('0' + t.lstrip) + static_cast<char>('0' + t.rstrip) +
         static_cast<char>('0' + t.normalized) + static_cast<char>('0' + t.special);
}

// The last code point of text[0, end) and the first of text[begin, ...).
uint32_t last_char(std::string_view text, size_t end) {
  size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
  size_t len = 1;
  return unicode::decode(text, start, len);
}

uint32_t first_char(std::string_view text, size_t begin) {
  size_t len = 1;
  return unicode::decode(text, begin, len);
}

}  // namespace

void AddedVocabulary::Trie::add(const std::string& pattern, int32_t token) {
  uint32_t node = 0;
  for (char c : pattern) {
    const uint64_t key = (static_cast<uint64_t>(node) << 8) | static_cast<uint8_t>(c);
    auto it = edges.find(key);
    if (it == edges.end()) {
      it = edges.emplace(key, static_cast<uint32_t>(terminal.size())).first;
      terminal.push_back(-1);
    }
    node = it->second;
  }
  if (terminal[node] < 0) terminal[node] = token;
}

AddedVocabulary::AddedVocabulary(const std::vector<AddedToken>& tokens, const Vocab& model_vocab,
                                 const Normalizer* normalizer) {
  std::vector<AddedToken> accepted;
  std::unordered_map<int32_t, size_t> slot;  // id -> index in accepted
  std::unordered_set<std::string> seen;
  const auto model_size = static_cast<int64_t>(model_vocab.ids.size());
  int64_t max_added = -1;
  for (const AddedToken& t : tokens) {
    if (t.content.empty()) continue;
    if (!seen.insert(identity(t)).second) continue;
    int64_t id;
    if (auto it = id_by_content_.find(t.content); it != id_by_content_.end()) {
      id = it->second;
    } else if (auto m = model_vocab.find(t.content)) {
      id = *m;
    } else {
      id = (max_added < 0)                                ? model_size
           : (max_added >= model_size || model_size == 0) ? max_added + 1
                                                          : model_size;
    }
    if (id > kMaxTokenId) continue;  // unreachable for sane files; keeps ids bounded
    max_added = std::max(max_added, id);
    id_by_content_[t.content] = static_cast<int32_t>(id);
    AddedToken copy = t;
    copy.id = static_cast<int32_t>(id);
    if (auto it = slot.find(copy.id); it != slot.end()) {
      accepted[it->second] = copy;  // a later token with the same id replaces the earlier
    } else {
      slot.emplace(copy.id, accepted.size());
      accepted.push_back(copy);
    }
  }
  std::sort(accepted.begin(), accepted.end(),
            [](const AddedToken& a, const AddedToken& b) { return a.id < b.id; });
  tokens_ = std::move(accepted);
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const AddedToken& t = tokens_[i];
    index_by_id_.emplace(t.id, i);
    if (!t.normalized) {
      raw_.add(t.content, static_cast<int32_t>(i));
      continue;
    }
    std::string pattern = t.content;
    if (normalizer) normalizer->normalize(pattern);
    if (!pattern.empty()) normalized_.add(pattern, static_cast<int32_t>(i));
  }
}

const AddedToken* AddedVocabulary::by_id(int32_t id) const {
  auto it = index_by_id_.find(id);
  return it == index_by_id_.end() ? nullptr : &tokens_[it->second];
}

std::optional<int32_t> AddedVocabulary::id_of(const std::string& content) const {
  auto it = id_by_content_.find(content);
  if (it == id_by_content_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::pair<int32_t, size_t>> AddedVocabulary::longest_at(const Trie& trie,
                                                                      std::string_view text,
                                                                      size_t pos,
                                                                      bool allow_special) const {
  std::optional<std::pair<int32_t, size_t>> best;
  uint32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    auto it = trie.edges.find((static_cast<uint64_t>(node) << 8) | static_cast<uint8_t>(text[i]));
    if (it == trie.edges.end()) break;
    node = it->second;
    const int32_t t = trie.terminal[node];
    if (t >= 0 && (allow_special || !tokens_[static_cast<size_t>(t)].special))
      best = {t, i + 1 - pos};
  }
  return best;
}

std::vector<Segment> AddedVocabulary::split(std::string_view text, bool normalized_set,
                                            bool allow_special) const {
  const Trie& trie = normalized_set ? normalized_ : raw_;
  std::vector<Segment> out;
  if (trie.edges.empty()) {
    if (!text.empty()) out.push_back({0, text.size(), -1});
    return out;
  }
  size_t done = 0;  // segments cover text before this
  size_t pos = 0;   // where the search for the next match begins
  while (pos < text.size()) {
    const auto match = longest_at(trie, text, pos, allow_special);
    if (!match) {
      ++pos;
      continue;
    }
    const AddedToken& token = tokens_[static_cast<size_t>(match->first)];
    size_t start = pos;
    size_t stop = pos + match->second;
    pos = stop;  // matches never overlap each other (lstrip / rstrip may widen them past that)
    if (token.single_word) {
      const bool space_before = start == 0 || !unicode::is_word(last_char(text, start));
      const bool space_after = stop == text.size() || !unicode::is_word(first_char(text, stop));
      if (!space_before || !space_after) continue;
    }
    if (token.lstrip) {
      size_t s = start;
      while (s > 0 && unicode::is_whitespace(last_char(text, s))) {
        --s;
        while (s > 0 && (static_cast<unsigned char>(text[s]) & 0xC0) == 0x80) --s;
      }
      start = std::max(s, done);
    }
    if (token.rstrip) {
      while (stop < text.size()) {
        size_t len = 1;
        if (!unicode::is_whitespace(unicode::decode(text, stop, len))) break;
        stop += len;
      }
    }
    if (done < start) out.push_back({done, start, -1});
    out.push_back({start, stop, token.id});
    done = std::max(done, stop);
  }
  if (done < text.size()) out.push_back({done, text.size(), -1});
  return out;
}

std::vector<AddedToken> parse_added_tokens(const Json* json, const Where& where) {
  std::vector<AddedToken> out;
  if (!json) return out;
  if (!json->is_array()) fail(where, "is not an array");
  for (size_t i = 0; i < json->size(); ++i) {
    const Json& t = (*json)[i];
    const Where at = where[i];
    AddedToken a;
    a.id = static_cast<int32_t>(get_int(t, "id", at, 0, kMaxTokenId));
    a.content = get_string(t, "content", at);
    a.special = get_bool(t, "special", at, false);
    a.single_word = get_bool(t, "single_word", at, false);
    a.lstrip = get_bool(t, "lstrip", at, false);
    a.rstrip = get_bool(t, "rstrip", at, false);
    a.normalized = get_bool(t, "normalized", at, !a.special);
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace hftrain::tokenizer::hf
