#include "data/classification_batch.h"

#include <algorithm>
#include <numeric>

#include "data/packing.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/hf/hf_tokenizer.h"
#include "util/error.h"

namespace hftrain::data {
namespace {

tokenizer::hf::TypedIds frame(const tokenizer::Tokenizer& tokenizer, const std::vector<int32_t>& a,
                   const std::vector<int32_t>* b, const std::string& origin) {
  if (const auto* hf_tokenizer = dynamic_cast<const tokenizer::HfTokenizer*>(&tokenizer)) {
    return hf_tokenizer->with_special_tokens(a, b);
  }
  std::vector<int32_t> prefix, suffix;  // byte-level BPE keeps only the single-sequence template
  if (const auto* bpe = dynamic_cast<const tokenizer::BpeTokenizer*>(&tokenizer)) {
    prefix = bpe->model().post_prefix;
    suffix = bpe->model().post_suffix;
  }
  if (prefix.empty() && suffix.empty()) return tokenizer::hf::post_process(nullptr, a, b);
  if (b) {
    throw util::DataError(
        "data file " + origin +
            ": a text pair, but this byte-level BPE tokenizer only says how "
            "to frame one sequence",
        "use single texts, or a tokenizer.json whose post-processor has a pair template (BERT's)");
  }
  tokenizer::hf::TypedIds out;
  out.ids = prefix;
  out.ids.insert(out.ids.end(), a.begin(), a.end());
  out.ids.insert(out.ids.end(), suffix.begin(), suffix.end());
  out.type_ids.assign(out.ids.size(), 0);
  return out;
}

}  // namespace

FramedIds frame_ids(const tokenizer::Tokenizer& tokenizer, const std::vector<int32_t>& a,
                    const std::vector<int32_t>* b, const std::string& origin) {
  tokenizer::hf::TypedIds t = frame(tokenizer, a, b, origin);
  return {std::move(t.ids), std::move(t.type_ids)};
}

EncodedExample encode_tagged(const tokenizer::Tokenizer& tokenizer, const TaggedSentence& sentence,
                             const std::vector<int64_t>& tags, int64_t max_length) {
  // Where the sentence's pieces land among the special tokens: frame one marker id.
  constexpr int32_t kMarker = -1;
  const auto marked = frame(tokenizer, {kMarker}, nullptr, sentence.origin).ids;
  const size_t specials = marked.size() - 1;
  const auto prefix = static_cast<size_t>(std::find(marked.begin(), marked.end(), kMarker) - marked.begin());
  if (max_length < static_cast<int64_t>(specials + 1)) {
    throw util::ConfigError("a maximum sequence length of " + std::to_string(max_length) +
                                " leaves no room for words beside the tokenizer's " + std::to_string(specials) +
                                " special tokens",
                            "raise it to at least " + std::to_string(specials + 1));
  }
  const size_t budget = static_cast<size_t>(max_length) - specials;
  std::vector<int32_t> pieces;
  std::vector<int64_t> labels;
  for (size_t w = 0; w < sentence.words.size() && pieces.size() < budget; ++w) {
    const std::vector<int32_t> word = tokenizer.encode(" " + sentence.words[w]);
    for (size_t i = 0; i < word.size() && pieces.size() < budget; ++i) {
      pieces.push_back(word[i]);
      labels.push_back(i == 0 ? tags.at(w) : kIgnoreIndex);
    }
  }
  tokenizer::hf::TypedIds framed = frame(tokenizer, pieces, nullptr, sentence.origin);
  EncodedExample out{std::move(framed.ids), std::move(framed.type_ids), 0, {}};
  out.token_labels.assign(out.input_ids.size(), kIgnoreIndex);
  std::copy(labels.begin(), labels.end(), out.token_labels.begin() + static_cast<long>(prefix));
  return out;
}

std::pair<size_t, size_t> truncated_lengths(size_t a_len, std::optional<size_t> b_len,
                                            size_t budget) {
  if (!b_len) return {std::min(a_len, budget), 0};
  if (a_len + *b_len <= budget) return {a_len, *b_len};
  // `tokenizers`' LongestFirst: the shorter (n1) keeps its length if the longer (n2) still gets at
  // least as much; otherwise both get half of the budget, the longer one the odd token.
  const bool swapped = a_len > *b_len;
  size_t n1 = std::min(a_len, *b_len);
  size_t n2 = n1 > budget ? n1 : std::max(n1, budget - n1);
  if (n1 + n2 > budget) {
    n1 = budget / 2;
    n2 = n1 + budget % 2;
  }
  return swapped ? std::pair{n2, n1} : std::pair{n1, n2};
}

EncodedExample encode_example(const tokenizer::Tokenizer& tokenizer, const LabelledExample& example,
                              int64_t label, int64_t max_length) {
  const bool pair = !example.text_pair.empty();
  const std::vector<int32_t> none;
  const size_t specials = frame(tokenizer, none, pair ? &none : nullptr, example.origin).ids.size();
  const size_t needed = specials + (pair ? 2 : 1);
  if (max_length < static_cast<int64_t>(needed)) {
    throw util::ConfigError("a maximum sequence length of " + std::to_string(max_length) +
                                " leaves no room for text beside the tokenizer's " +
                                std::to_string(specials) + " special tokens" +
                                (pair ? " of a pair" : ""),
                            "raise it to at least " + std::to_string(needed));
  }
  std::vector<int32_t> a = tokenizer.encode(example.text);
  std::vector<int32_t> b = pair ? tokenizer.encode(example.text_pair) : std::vector<int32_t>{};
  const auto [keep_a, keep_b] =
      truncated_lengths(a.size(), pair ? std::optional(b.size()) : std::nullopt,
                        static_cast<size_t>(max_length) - specials);
  a.resize(keep_a);
  b.resize(keep_b);
  tokenizer::hf::TypedIds framed = frame(tokenizer, a, pair ? &b : nullptr, example.origin);
  return {std::move(framed.ids), std::move(framed.type_ids), label, {}};
}

std::vector<EncodedExample> encode_examples(const tokenizer::Tokenizer& tokenizer,
                                            const std::vector<LabelledExample>& examples,
                                            const std::vector<int64_t>& labels,
                                            int64_t max_length) {
  std::vector<EncodedExample> out;
  out.reserve(examples.size());
  for (size_t i = 0; i < examples.size(); ++i)
    out.push_back(encode_example(tokenizer, examples[i], labels.at(i), max_length));
  return out;
}

ClassificationBatch collate_classification(std::span<const EncodedExample> examples, int32_t pad_id,
                                           int64_t pad_to_multiple_of) {
  std::vector<uint64_t> rows(examples.size());
  std::iota(rows.begin(), rows.end(), uint64_t{0});
  return collate_classification(examples, rows, pad_id, pad_to_multiple_of);
}

ClassificationBatch collate_classification(std::span<const EncodedExample> examples, std::span<const uint64_t> rows,
                                           int32_t pad_id, int64_t pad_to_multiple_of) {
  ClassificationBatch batch;
  batch.batch_size = static_cast<int64_t>(rows.size());
  int64_t longest = 0;
  for (uint64_t r : rows) longest = std::max(longest, static_cast<int64_t>(examples[r].input_ids.size()));
  const int64_t multiple = std::max<int64_t>(1, pad_to_multiple_of);
  batch.seq_len = (longest + multiple - 1) / multiple * multiple;
  const size_t cells = static_cast<size_t>(batch.batch_size * batch.seq_len);
  batch.input_ids.assign(cells, pad_id);
  batch.attention_mask.assign(cells, 0);
  batch.token_type_ids.assign(cells, 0);
  batch.token_labels = !rows.empty() && !examples[rows.front()].token_labels.empty();
  if (batch.token_labels) batch.labels.assign(cells, kIgnoreIndex);
  for (size_t row = 0; row < rows.size(); ++row) {
    const auto& e = examples[rows[row]];
    const size_t base = row * static_cast<size_t>(batch.seq_len);
    std::copy(e.input_ids.begin(), e.input_ids.end(),
              batch.input_ids.begin() + static_cast<long>(base));
    std::copy(e.token_type_ids.begin(), e.token_type_ids.end(),
              batch.token_type_ids.begin() + static_cast<long>(base));
    std::fill_n(batch.attention_mask.begin() + static_cast<long>(base), e.input_ids.size(), 1);
    if (batch.token_labels) {
      std::copy(e.token_labels.begin(), e.token_labels.end(), batch.labels.begin() + static_cast<long>(base));
    } else {
      batch.labels.push_back(e.label);
    }
  }
  return batch;
}

}  // namespace hftrain::data
