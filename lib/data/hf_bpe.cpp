#include "data/hf_bpe.h"

#include <queue>

#include "data/unicode.h"

namespace hftrain::data::hf {
namespace {

constexpr size_t kCacheLimit = size_t{1} << 17;
// Longer pieces are not cached: without a pre-tokenizer (Llama-2, Mistral) a piece is a whole
// document, which would only fill the cache (tokenizers' BPE cache has a length limit too).
constexpr size_t kCachedPieceBytes = 256;

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

struct Symbol {
  int32_t id;
  int32_t prev;  // index of the previous live symbol, -1 at the start
  int32_t next;  // index of the next live symbol, -1 at the end
  bool live;
};

struct Candidate {
  int32_t rank;
  int32_t pos;
  int32_t new_id;
  // The heap's top is the lowest rank, then the leftmost position.
  bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

}  // namespace

Bpe::Bpe(Vocab vocab, const std::vector<std::pair<std::string, std::string>>& merges,
         BpeOptions options, const Where& where)
    : vocab_(std::move(vocab)), options_(std::move(options)) {
  if (options_.unk_token) {
    unk_id_ = vocab_.find(*options_.unk_token);
    if (!unk_id_)
      fail(where / "unk_token",
           "names " + shown(*options_.unk_token) + ", which is not in model.vocab");
  }
  for (int b = 0; b < 256; ++b) {
    static const char* kHex = "0123456789ABCDEF";
    const std::string name = std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">";
    byte_ids_[b] = vocab_.find(name).value_or(-1);
  }
  const size_t prefix = options_.continuing_subword_prefix.size();
  merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    const auto a = vocab_.find(left);
    const auto b = vocab_.find(right);
    // The merged token drops the right part's continuing-subword prefix ("##a" + "##b" = "##ab").
    const bool strip =
        prefix > 0 && right.compare(0, prefix, options_.continuing_subword_prefix) == 0;
    const auto merged = vocab_.find(left + (strip ? right.substr(prefix) : right));
    if (!a || !b || !merged) {
      fail((where / "merges")[rank], "merges " + shown(left) + " and " + shown(right) + ", but " +
                                         (!a   ? shown(left)
                                          : !b ? shown(right)
                                               : "the result") +
                                         " is not in model.vocab");
    }
    // A repeated merge keeps its last rank, as tokenizers' map does.
    merges_[pair_key(*a, *b)] = {static_cast<int32_t>(rank), *merged};
  }
}

void Bpe::merge_word(const std::string& piece, std::vector<int32_t>& out) const {
  std::vector<Symbol> symbols;
  symbols.reserve(piece.size());
  auto add = [&](int32_t id) {
    const auto n = static_cast<int32_t>(symbols.size());
    symbols.push_back(Symbol{id, n - 1, -1, true});
    if (n > 0) symbols[static_cast<size_t>(n - 1)].next = n;
  };
  int32_t pending_unk = -1;  // an unk not yet added (fuse_unk joins a run into one); -1: none
  for (size_t i = 0; i < piece.size();) {
    size_t len = 1;
    unicode::decode(piece, i, len);
    const bool first = i == 0;
    const bool last = i + len == piece.size();
    std::string s = piece.substr(i, len);
    i += len;
    if (!first) s.insert(0, options_.continuing_subword_prefix);
    if (last) s += options_.end_of_word_suffix;
    if (auto id = vocab_.find(s)) {
      if (pending_unk >= 0) add(pending_unk);
      pending_unk = -1;
      add(*id);
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (char c : s) all = all && byte_ids_[static_cast<uint8_t>(c)] >= 0;
      if (all) {
        for (char c : s) add(byte_ids_[static_cast<uint8_t>(c)]);
        continue;
      }
    }
    if (unk_id_) {
      if (pending_unk >= 0 && !options_.fuse_unk) add(pending_unk);
      pending_unk = *unk_id_;
    }
    // Without an unk token the character is dropped, as tokenizers drops it.
  }
  if (pending_unk >= 0) add(pending_unk);

  std::priority_queue<Candidate> queue;
  auto push_pair = [&](int32_t pos) {
    const Symbol& s = symbols[static_cast<size_t>(pos)];
    if (s.next < 0) return;
    auto it = merges_.find(pair_key(s.id, symbols[static_cast<size_t>(s.next)].id));
    if (it != merges_.end()) queue.push(Candidate{it->second.first, pos, it->second.second});
  };
  for (int32_t pos = 0; pos + 1 < static_cast<int32_t>(symbols.size()); ++pos) push_pair(pos);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[static_cast<size_t>(top.pos)];
    if (!left.live || left.next < 0) continue;
    Symbol& right = symbols[static_cast<size_t>(left.next)];
    // A stale entry: the pair at this position changed since it was queued.
    auto it = merges_.find(pair_key(left.id, right.id));
    if (it == merges_.end() || it->second.second != top.new_id) continue;
    left.id = top.new_id;
    right.live = false;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = top.pos;
    if (left.prev >= 0) push_pair(left.prev);
    push_pair(top.pos);
  }
  for (const Symbol& s : symbols) {
    if (s.live) out.push_back(s.id);
  }
}

void Bpe::tokenize(const std::string& piece, std::vector<int32_t>& out) const {
  if (options_.ignore_merges) {
    if (auto id = vocab_.find(piece)) {
      out.push_back(*id);
      return;
    }
  }
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (auto it = cache_.find(piece); it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> ids;
  merge_word(piece, ids);
  out.insert(out.end(), ids.begin(), ids.end());
  if (piece.size() > kCachedPieceBytes) return;  // a whole document (no pre-tokenizer): never seen twice
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (cache_.size() >= kCacheLimit) cache_.clear();
  cache_.emplace(piece, std::move(ids));
}

std::unique_ptr<Model> parse_bpe(const Json& json, const Where& where) {
  if (const Json* d = member(json, "dropout", where)) {
    if (!d->is_number()) fail(where / "dropout", "is not a number");
    // Dropout makes encoding random (tokenizers applies it at every encode); 0 is the same as none.
    if (d->get<double>() != 0.0)
      unsupported(where / "dropout", d->dump(), "BPE without dropout (null or 0)");
  }
  BpeOptions o;
  o.unk_token = get_optional_string(json, "unk_token", where);
  o.fuse_unk = get_bool(json, "fuse_unk", where, false);
  o.byte_fallback = get_bool(json, "byte_fallback", where, false);
  o.continuing_subword_prefix =
      get_optional_string(json, "continuing_subword_prefix", where).value_or("");
  o.end_of_word_suffix = get_optional_string(json, "end_of_word_suffix", where).value_or("");
  o.ignore_merges = get_bool(json, "ignore_merges", where, false);
  Vocab vocab = parse_vocab(get_object(json, "vocab", where), where / "vocab");
  std::vector<std::pair<std::string, std::string>> merges;
  const Json* list = member(json, "merges", where);
  if (list && !list->is_array()) fail(where / "merges", "is not an array");
  if (list) {
    merges.reserve(list->size());
    for (size_t i = 0; i < list->size(); ++i) {
      const Json& m = (*list)[i];
      const Where at = (where / "merges")[i];
      if (m.is_string()) {  // the older "left right" form
        const std::string s = m.get<std::string>();
        const size_t space = s.find(' ');
        if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
          fail(at, "is " + shown(s) + ", not two tokens separated by one space");
        }
        merges.emplace_back(s.substr(0, space), s.substr(space + 1));
      } else if (m.is_array() && m.size() == 2) {
        merges.emplace_back(as_string(m[0], at[0]), as_string(m[1], at[1]));
      } else {
        fail(at, "is neither \"left right\" nor [\"left\", \"right\"]");
      }
    }
  }
  return std::make_unique<Bpe>(std::move(vocab), merges, std::move(o), where);
}

}  // namespace hftrain::data::hf
