// make_classification_loaders (loader.h): labelled records (or tagged sentences) read, labelled,
// encoded once, then padded per batch by the loader's workers.
#include <algorithm>
#include <numeric>
#include <random>

#include "data/hold_out.h"
#include "data/loader.h"
#include "util/error.h"

namespace hftrain::data {
namespace {

class ClassificationSource final : public BatchSource {
 public:
  ClassificationSource(std::vector<EncodedExample> examples, int32_t pad_id, int64_t pad_to_multiple_of)
      : examples_(std::move(examples)), pad_id_(pad_id), multiple_(pad_to_multiple_of) {}
  uint64_t num_samples() const override { return examples_.size(); }
  HostBatch collate(std::span<const uint64_t> sample_ids) const override {
    ClassificationBatch c = collate_classification(examples_, sample_ids, pad_id_, multiple_);
    HostBatch out;
    out.batch_size = c.batch_size;
    out.seq_len = c.seq_len;
    out.input_ids = std::move(c.input_ids);
    out.attention_mask = std::move(c.attention_mask);
    out.token_type_ids = std::move(c.token_type_ids);
    out.labels = std::move(c.labels);
    out.sequence_labels = !c.token_labels;
    out.num_target_tokens = static_cast<int64_t>(
        std::count_if(out.labels.begin(), out.labels.end(), [](int64_t l) { return l != kIgnoreIndex; }));
    out.sample_ids.assign(sample_ids.begin(), sample_ids.end());
    return out;
  }

 private:
  std::vector<EncodedExample> examples_;
  int32_t pad_id_;
  int64_t multiple_;
};

// Every record of `files`, in order, read by `read` (read_labelled, read_tagged).
template <typename Options, typename Read>
auto read_all(const std::vector<std::filesystem::path>& files, const Options& options, Read read) {
  decltype(read(std::filesystem::path(), options)) out;
  for (const auto& f : files) {
    auto part = read(f, options);
    out.insert(out.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
  }
  return out;
}

Loaders make_loaders_of(std::shared_ptr<BatchSource> train, std::shared_ptr<BatchSource> validation,
                        const LoaderOptions& loader, torch::Device device) {
  Loaders out;
  out.train = std::make_unique<DataLoader>(std::move(train), loader, device);
  if (validation) {
    LoaderOptions v = loader;
    v.sampler.shuffle = false;
    v.wrap = false;
    out.validation = std::make_unique<DataLoader>(std::move(validation), v, device);
  }
  return out;
}

// Token classification: tagged sentences, each word's tag on its first piece.
Loaders tagging_loaders(const ClassificationOptions& options, const LoaderOptions& loader,
                        const tokenizer::Tokenizer& tokenizer, torch::Device device) {
  std::vector<TaggedSentence> train = read_all(options.train, options.tagged, read_tagged);
  std::vector<TaggedSentence> validation = read_all(options.validation, options.tagged, read_tagged);
  hold_out(train, validation, options.validation, options.validation_fraction, options.split_seed);
  const LabelSet tags = options.labels ? *options.labels : tag_set_of(train, options.train.front().string());
  auto source = [&](const std::vector<TaggedSentence>& sentences) -> std::shared_ptr<BatchSource> {
    if (sentences.empty()) return nullptr;
    const auto ids = tag_ids(sentences, tags);
    std::vector<EncodedExample> encoded;
    encoded.reserve(sentences.size());
    for (size_t i = 0; i < sentences.size(); ++i) {
      encoded.push_back(encode_tagged(tokenizer, sentences[i], ids[i], options.max_length));
    }
    return std::make_shared<ClassificationSource>(std::move(encoded), tokenizer.pad_id(), options.pad_to_multiple_of);
  };
  Loaders out = make_loaders_of(source(train), source(validation), loader, device);
  out.labels = tags;
  out.tagging = true;
  return out;
}

}  // namespace

Loaders make_classification_loaders(const ClassificationOptions& options, const LoaderOptions& loader,
                                    const tokenizer::Tokenizer& tokenizer, torch::Device device) {
  if (options.train.empty()) {
    throw util::DataError("data.train names no labelled file",
                          options.tagging ? "set data.train to JSONL or CoNLL files of tagged sentences"
                                          : "set data.train to CSV, TSV or JSONL files");
  }
  if (options.tagging) return tagging_loaders(options, loader, tokenizer, device);
  std::vector<LabelledExample> train = read_all(options.train, options.records, read_labelled);
  std::vector<LabelledExample> validation = read_all(options.validation, options.records, read_labelled);
  hold_out(train, validation, options.validation, options.validation_fraction, options.split_seed);
  const LabelSet labels = options.labels ? *options.labels : label_set_of(train, options.train.front().string());
  auto source = [&](const std::vector<LabelledExample>& examples) -> std::shared_ptr<BatchSource> {
    if (examples.empty()) return nullptr;
    return std::make_shared<ClassificationSource>(
        encode_examples(tokenizer, examples, label_ids(examples, labels), options.max_length),
        tokenizer.pad_id(), options.pad_to_multiple_of);
  };
  Loaders out = make_loaders_of(source(train), source(validation), loader, device);
  out.labels = labels;
  return out;
}

}  // namespace hftrain::data
