#include "tokenizer/hf/hf_tokenizer.h"

#include <algorithm>

#include "tokenizer/unicode.h"
#include "util/error.h"
#include "util/hash.h"

namespace hftrain::tokenizer {

HfTokenizer::HfTokenizer(const hf::Json& doc, std::string text, const std::string& name,
                         const SpecialTokenChoice& choice)
    : text_(std::move(text)), ids_{-1, -1, ""} {
  const std::string label = "tokenizer " + name;
  const hf::Where top = hf::top_of(label);
  if (!doc.is_object())
    hf::fail(top, "is not a JSON object", "is it a Hugging Face tokenizer.json?");
  auto part = [&](const char* key) -> const hf::Json& {
    static const hf::Json kNull;
    const hf::Json* v = hf::member(doc, key, top);
    return v ? *v : kNull;
  };
  normalizer_ = hf::parse_normalizer(part("normalizer"), top / "normalizer");
  pre_tokenizer_ = hf::parse_pre_tokenizer(part("pre_tokenizer"), top / "pre_tokenizer");
  model_ = hf::parse_model(part("model"), top / "model");
  decoder_ = hf::parse_decoder(part("decoder"), top / "decoder");
  added_ = std::make_unique<hf::AddedVocabulary>(
      hf::parse_added_tokens(hf::member(doc, "added_tokens", top), top / "added_tokens"),
      model_->vocab(), normalizer_.get());

  vocab_size_ = hf::vocab_size(*added_, model_->vocab(), top);
  // After the vocabulary: the post-processor's ids are checked against its size.
  post_processor_ =
      hf::parse_post_processor(part("post_processor"), top / "post_processor", vocab_size_);
  ids_ = choose_special_ids(
      choice, hf::special_candidates(doc, top, *added_, model_->vocab(), post_processor_.get()),
      name);

  util::Hasher h;
  h.update(text_);
  fingerprint_ = "hf-v1:" + std::to_string(vocab_size_) + ":" + h.hex() + ":eot" +
                 std::to_string(ids_.eot) + ":pad" + std::to_string(ids_.pad);
}

std::vector<int32_t> HfTokenizer::encode(std::string_view input, bool allow_special) const {
  const std::string text = unicode::valid_utf8(input);
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 1);
  std::vector<hf::Piece> pieces;
  for (const hf::Segment& raw : added_->split(text, false, allow_special)) {
    if (raw.id >= 0) {
      out.push_back(raw.id);
      continue;
    }
    std::string part = text.substr(raw.begin, raw.end - raw.begin);
    if (normalizer_) normalizer_->normalize(part);
    for (const hf::Segment& seg : added_->split(part, true, allow_special)) {
      if (seg.id >= 0) {
        out.push_back(seg.id);
        continue;
      }
      pieces.assign(1, hf::Piece{part.substr(seg.begin, seg.end - seg.begin),
                                 raw.begin == 0 && seg.begin == 0});
      if (pre_tokenizer_) pre_tokenizer_->pre_tokenize(pieces);
      for (const hf::Piece& p : pieces) {
        if (!p.text.empty()) model_->tokenize(p.text, out);
      }
    }
  }
  return out;
}

std::vector<int32_t> HfTokenizer::encode_with_special_tokens(std::string_view text) const {
  std::vector<int32_t> ids = encode(text, true);
  return post_processor_ ? post_processor_->process(ids, nullptr) : ids;
}

std::string HfTokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  const hf::Vocab& vocab = model_->vocab();
  for (int32_t id : ids) {
    if (id < 0 || id >= vocab_size_) {
      throw util::DataError("token id " + std::to_string(id) +
                            " is outside the tokenizer's vocabulary (size " +
                            std::to_string(vocab_size_) + ")");
    }
    if (const hf::AddedToken* t = added_->by_id(id)) {
      if (!(skip_special && t->special)) tokens.push_back(t->content);
    } else if (static_cast<size_t>(id) < vocab.tokens.size() &&
               vocab.present[static_cast<size_t>(id)]) {
      tokens.push_back(vocab.tokens[static_cast<size_t>(id)]);
    }
    // An id in a gap of the vocabulary decodes to nothing, as in tokenizers.
  }
  std::string out;
  if (decoder_) {
    decoder_->decode_chain(tokens);
    for (const auto& t : tokens) out += t;
    return out;
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i > 0) out += ' ';
    out += tokens[i];
  }
  return out;
}

std::string HfTokenizer::normalized(std::string_view text) const {
  std::string out = unicode::valid_utf8(text);
  if (normalizer_) normalizer_->normalize(out);
  return out;
}

std::vector<std::string> HfTokenizer::pre_tokenized(std::string_view text) const {
  if (text.empty()) return {};
  std::vector<hf::Piece> pieces{hf::Piece{unicode::valid_utf8(text), true}};
  if (pre_tokenizer_) pre_tokenizer_->pre_tokenize(pieces);
  std::vector<std::string> out;
  for (auto& p : pieces) out.push_back(std::move(p.text));
  return out;
}

std::optional<int32_t> HfTokenizer::special_id(std::string_view content) const {
  return added_->id_of(std::string(content));
}

namespace hf {

int32_t vocab_size(const AddedVocabulary& added, const Vocab& vocab, const Where& top) {
  auto size = static_cast<int32_t>(vocab.tokens.size());
  if (!added.empty()) size = std::max(size, added.tokens().back().id + 1);
  if (size == 0) fail(top / "model" / "vocab", "is empty");
  return size;
}

SpecialCandidates special_candidates(const Json& doc, const Where& top,
                                     const AddedVocabulary& added, const Vocab& vocab,
                                     const PostProcessor* post_processor) {
  SpecialCandidates c;
  c.id_of = [&added, &vocab](const std::string& token) -> std::optional<int32_t> {
    if (auto id = added.id_of(token)) return id;
    return vocab.find(token);
  };
  for (const auto& t : added.tokens()) {
    if (t.special) c.specials.push_back(t.content);
  }
  if (post_processor) {
    const auto suffix = post_processor->single_suffix();
    if (!suffix.empty()) c.post_processor_eos = suffix.back();
  }
  if (const Json* padding = member(doc, "padding", top)) {
    c.padding_token = get_optional_string(*padding, "pad_token", top / "padding");
  }
  return c;
}

}  // namespace hf
}  // namespace hftrain::tokenizer
