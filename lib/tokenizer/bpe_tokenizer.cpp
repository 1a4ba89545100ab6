#include "tokenizer/bpe_tokenizer.h"

#include <algorithm>

#include "tokenizer/pretokenizer.h"
#include "util/error.h"
#include "util/hash.h"

namespace hftrain::tokenizer {

BpeTokenizer::BpeTokenizer(BpeModel model) : model_(std::move(model)) {
  std::fill(std::begin(byte_ids_), std::end(byte_ids_), -1);
  std::vector<bool> is_special(model_.vocab.size(), false);
  for (const auto& [id, content] : model_.specials) {
    if (id < 0 || static_cast<size_t>(id) >= model_.vocab.size()) {
      throw util::DataError("special token '" + content + "' has id " + std::to_string(id) +
                            ", outside the vocabulary of " + std::to_string(model_.vocab.size()));
    }
    is_special[static_cast<size_t>(id)] = true;
    model_.vocab[static_cast<size_t>(id)] = content;
  }
  for (size_t id = 0; id < model_.vocab.size(); ++id) {
    const std::string& token = model_.vocab[id];
    if (token.empty() || is_special[id]) continue;
    token_to_id_.emplace(token, static_cast<int32_t>(id));
    if (token.size() == 1) byte_ids_[static_cast<uint8_t>(token[0])] = static_cast<int32_t>(id);
  }
  util::Hasher h;  // the fingerprint: everything that decides the ids
  h.update(model_.ignore_merges ? "im1" : "im0");
  h.update(model_.add_prefix_space ? "ps1" : "ps0");
  h.update(model_.byte_level_split ? "bl1" : "bl0");
  h.update("split:" + model_.split_regex + "\x1f");
  if (!model_.split_regex.empty()) {
    splitter_ = std::make_shared<RegexSplitter>(
        model_.split_regex, model_.split_regex_source.empty() ? std::string("tokenizer") : model_.split_regex_source);
  }
  for (const BpeMerge& m : model_.merges) {
    for (int32_t id : {m.left, m.right, m.merged}) check_id(id, "merge");
    h.update(std::to_string(m.left) + "," + std::to_string(m.right) + ";");
  }
  merges_ = BpeMerges(model_.merges);
  for (size_t id = 0; id < model_.vocab.size(); ++id) h.update(model_.vocab[id] + "\x1f");
  for (const auto& [id, content] : model_.specials) h.update(std::to_string(id) + content);
  // Only what older files never set joins the hash, so that their fingerprints (token caches) stay.
  if (!model_.eos_token.empty()) h.update("eos:" + model_.eos_token + "\x1f");
  if (!model_.pad_token.empty()) h.update("pad:" + model_.pad_token + "\x1f");
  for (int32_t id : model_.post_prefix) h.update("pre:" + std::to_string(id));
  for (int32_t id : model_.post_suffix) h.update("post:" + std::to_string(id));
  // A repeated merge keeps its last rank, as in `tokenizers`; hftrain once kept the first, so
  // tokenizers with repeats join the hash (their ids may have changed) and the others keep theirs.
  if (merges_.size() < model_.merges.size()) h.update("merges:last-rank\x1f");
  fingerprint_ = "bpe-v2:" + std::to_string(model_.vocab.size()) + ":" + h.hex();
  const std::string eos = model_.eos_token.empty() ? std::string(kEndOfTextToken) : model_.eos_token;
  auto eot = token_id(eos);
  if (!eot) {
    throw util::DataError("the BPE tokenizer has no " + eos + " token to end documents with",
                          "add " + std::string(kEndOfTextToken) +
                              " to the tokenizer's added_tokens (special: true), or name its end-of-text token in a "
                              "tokenizer_config.json (\"eos_token\") next to it");
  }
  eot_id_ = *eot;
  if (!model_.pad_token.empty()) {
    auto pad = token_id(model_.pad_token);
    if (!pad) throw util::DataError("the BPE tokenizer has no " + model_.pad_token + " token to pad with");
    pad_id_ = *pad;
  } else {
    pad_id_ = special_id(kPadToken).value_or(eot_id_);
  }
  for (int32_t id : model_.post_prefix) check_id(id, "post-processor");
  for (int32_t id : model_.post_suffix) check_id(id, "post-processor");
}

std::optional<int32_t> BpeTokenizer::token_id(const std::string& content) const {
  if (auto id = special_id(content)) return id;
  if (auto it = token_to_id_.find(content); it != token_to_id_.end()) return it->second;
  return std::nullopt;
}

void BpeTokenizer::check_id(int32_t id, const char* what) const {
  if (id < 0 || id >= vocab_size()) {
    throw util::DataError(std::string("the BPE tokenizer's ") + what + " names token id " + std::to_string(id) +
                          ", outside its vocabulary of " + std::to_string(vocab_size()));
  }
}

std::vector<int32_t> BpeTokenizer::encode_with_special_tokens(std::string_view text) const {
  std::vector<int32_t> out = model_.post_prefix;
  const std::vector<int32_t> ids = encode(text, true);
  out.insert(out.end(), ids.begin(), ids.end());
  out.insert(out.end(), model_.post_suffix.begin(), model_.post_suffix.end());
  return out;
}

std::string BpeTokenizer::decode_without_special(std::span<const int32_t> ids) const {
  std::vector<int32_t> kept;
  kept.reserve(ids.size());
  for (int32_t id : ids) {
    const bool special = std::any_of(model_.specials.begin(), model_.specials.end(),
                                     [&](const auto& s) { return s.first == id; });
    if (!special) kept.push_back(id);
  }
  return decode(kept);
}

std::optional<int32_t> BpeTokenizer::special_id(std::string_view content) const {
  for (const auto& [id, text] : model_.specials) {
    if (text == content) return id;
  }
  return std::nullopt;
}

void BpeTokenizer::encode_piece(std::string_view piece, std::vector<int32_t>& out) const {
  if (model_.ignore_merges) {
    if (auto it = token_to_id_.find(std::string(piece)); it != token_to_id_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  std::vector<int32_t> symbols;
  symbols.reserve(piece.size());
  for (char c : piece) {
    int32_t id = byte_ids_[static_cast<uint8_t>(c)];
    if (id >= 0) symbols.push_back(id);
  }
  merges_.apply(symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
}

void BpeTokenizer::encode_plain(std::string_view text, std::vector<int32_t>& out) const {
  // The pre-tokenizers in order: the Split regex (if any), then ByteLevel's own GPT-2 split.
  std::vector<std::string_view> pieces = splitter_ ? splitter_->split(text) : std::vector<std::string_view>{text};
  if (model_.byte_level_split) {
    std::vector<std::string_view> finer;
    for (std::string_view p : pieces) {
      for (std::string_view q : gpt2_split(p)) finer.push_back(q);
    }
    pieces = std::move(finer);
  }
  for (std::string_view piece : pieces) {
    if (piece.empty()) continue;
    cache_.append(piece, out, [&](std::vector<int32_t>& ids) { encode_piece(piece, ids); });
  }
}

std::vector<int32_t> BpeTokenizer::encode(std::string_view text, bool allow_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 1);
  std::string prefixed;
  if (model_.add_prefix_space && !text.empty() && text.front() != ' ') {
    prefixed = " " + std::string(text);
    text = prefixed;
  }
  if (!allow_special || model_.specials.empty()) {
    encode_plain(text, out);
    return out;
  }
  // Special tokens are cut out first; the text between them is encoded on its own.
  size_t pos = 0;
  size_t plain_start = 0;
  while (pos < text.size()) {
    int32_t matched = -1;
    size_t matched_len = 0;
    for (const auto& [id, content] : model_.specials) {
      if (content.size() > matched_len && text.substr(pos, content.size()) == content) {
        matched = id;
        matched_len = content.size();
      }
    }
    if (matched < 0) {
      ++pos;
      continue;
    }
    encode_plain(text.substr(plain_start, pos - plain_start), out);
    out.push_back(matched);
    pos += matched_len;
    plain_start = pos;
  }
  encode_plain(text.substr(plain_start), out);
  return out;
}

std::string BpeTokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size()) {
      throw util::DataError("token id " + std::to_string(id) + " is outside the BPE vocabulary (size " +
                            std::to_string(vocab_size()) + ")");
    }
    out += model_.vocab[static_cast<size_t>(id)];
  }
  return out;
}

}  // namespace hftrain::tokenizer
