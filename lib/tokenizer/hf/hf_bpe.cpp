#include "tokenizer/hf/hf_bpe.h"

#include "tokenizer/unicode.h"

namespace hftrain::tokenizer::hf {

Bpe::Bpe(BpeTables tables, BpeOptions options, const Where& where)
    : vocab_(std::move(tables.vocab)), options_(std::move(options)), merges_(tables.merges) {
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
}

void Bpe::merge_word(const std::string& piece, std::vector<int32_t>& symbols) const {
  symbols.reserve(piece.size());
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
      if (pending_unk >= 0) symbols.push_back(pending_unk);
      pending_unk = -1;
      symbols.push_back(*id);
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (char c : s) all = all && byte_ids_[static_cast<uint8_t>(c)] >= 0;
      if (all) {
        for (char c : s) symbols.push_back(byte_ids_[static_cast<uint8_t>(c)]);
        continue;
      }
    }
    if (unk_id_) {
      if (pending_unk >= 0 && !options_.fuse_unk) symbols.push_back(pending_unk);
      pending_unk = *unk_id_;
    }
    // Without an unk token the character is dropped, as tokenizers drops it.
  }
  if (pending_unk >= 0) symbols.push_back(pending_unk);
  merges_.apply(symbols);
}

void Bpe::tokenize(const std::string& piece, std::vector<int32_t>& out) const {
  if (options_.ignore_merges) {
    if (auto id = vocab_.find(piece)) {
      out.push_back(*id);
      return;
    }
  }
  cache_.append(piece, out, [&](std::vector<int32_t>& ids) { merge_word(piece, ids); });
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
  BpeTables tables = parse_bpe_tables(json, where, o.continuing_subword_prefix);
  return std::make_unique<Bpe>(std::move(tables), std::move(o), where);
}

}  // namespace hftrain::tokenizer::hf
