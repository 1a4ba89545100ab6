// A Hugging Face tokenizer.json of any supported kind, run as the `tokenizers` library runs it:
// added tokens cut out, then per segment normalizer -> pre-tokenizer -> model, and on request the
// post-processor; decoding maps ids to tokens and runs the decoder. The byte-level BPE files
// hftrain writes (and GPT-2 / Llama-3 style files) load as the faster BpeTokenizer instead
// (tokenizer_json.h decides); this class takes everything else: SentencePiece-style BPE with
// byte fallback (Llama-2, Mistral), WordPiece (BERT), WordLevel, normalizers and so on.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tokenizer/hf/hf_added_tokens.h"
#include "tokenizer/hf/hf_decoder.h"
#include "tokenizer/hf/hf_json.h"
#include "tokenizer/hf/hf_model.h"
#include "tokenizer/hf/hf_normalizer.h"
#include "tokenizer/hf/hf_post_processor.h"
#include "tokenizer/hf/hf_pre_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_specials.h"

namespace hftrain::tokenizer {
namespace hf {

// The number of ids: the model's vocabulary (gaps included) and the added tokens after it. Fails
// naming model.vocab when there are none.
int32_t vocab_size(const AddedVocabulary& added, const Vocab& vocab, const Where& top);

// What a tokenizer.json offers as its end-of-text and padding tokens (tokenizer_specials.h): its
// added and model tokens, the post-processor's last special token, the "padding" section. Both
// HfTokenizer and the byte-level BpeTokenizer choose from this. The result refers to `added` and
// `vocab`, which must outlive it.
SpecialCandidates special_candidates(const Json& doc, const Where& top,
                                     const AddedVocabulary& added, const Vocab& vocab,
                                     const PostProcessor* post_processor);

}  // namespace hf

class HfTokenizer : public Tokenizer {
 public:
  // `doc` is the parsed file, `text` its bytes (kept to be written out again), `name` its path
  // for messages. Throws DataError naming the JSON path of anything unsupported or malformed.
  HfTokenizer(const hf::Json& doc, std::string text, const std::string& name,
              const SpecialTokenChoice& choice);

  // As `tokenizers`' encode(text, add_special_tokens=False); without allow_special, special
  // tokens' text is encoded as text (encode_special_tokens=True). Text that is not valid UTF-8 has
  // its bad bytes replaced by U+FFFD first.
  std::vector<int32_t> encode(std::string_view text, bool allow_special = false) const override;
  std::vector<int32_t> encode_with_special_tokens(std::string_view text) const override;
  // The post-processor's part of `tokenizers`' encode(a, b, add_special_tokens=True) on ids that
  // encode() gave (b null for one sequence): the special tokens around them ([CLS] a [SEP] b [SEP])
  // and each position's type id (BERT's token_type_ids). Callers truncate a and b first, as
  // `tokenizers` does, to leave room for the special tokens (with_special_tokens({}, &{}) counts
  // them).
  hf::TypedIds with_special_tokens(const std::vector<int32_t>& a,
                                   const std::vector<int32_t>* b) const {
    return hf::post_process(post_processor_.get(), a, b);
  }
  std::string decode(std::span<const int32_t> ids) const override { return decode(ids, false); }
  std::string decode_without_special(std::span<const int32_t> ids) const override {
    return decode(ids, true);
  }
  int32_t vocab_size() const override { return vocab_size_; }
  int32_t eot_id() const override { return ids_.eot; }
  int32_t pad_id() const override { return ids_.pad; }
  std::optional<int32_t> special_id(std::string_view content) const override;
  std::string fingerprint() const override { return fingerprint_; }

  // The stages on their own, for tests and diagnosis: the normalized text (no added tokens cut
  // out), and the pieces the pre-tokenizer cuts it into.
  std::string normalized(std::string_view text) const;
  std::vector<std::string> pre_tokenized(std::string_view text) const;

  // The tokenizer.json text this tokenizer was loaded from.
  const std::string& json_text() const { return text_; }
  // The model's kind ("BPE", "WordPiece", "WordLevel", "Unigram").
  std::string model_kind() const { return model_->kind(); }

 private:
  std::string decode(std::span<const int32_t> ids, bool skip_special) const;

  std::string text_;
  std::unique_ptr<hf::Normalizer> normalizer_;
  std::unique_ptr<hf::PreTokenizer> pre_tokenizer_;
  std::unique_ptr<hf::Model> model_;
  std::unique_ptr<hf::PostProcessor> post_processor_;
  std::unique_ptr<hf::Decoder> decoder_;
  std::unique_ptr<hf::AddedVocabulary> added_;
  int32_t vocab_size_ = 0;
  SpecialIds ids_;
  std::string fingerprint_;
};

}  // namespace hftrain::tokenizer
