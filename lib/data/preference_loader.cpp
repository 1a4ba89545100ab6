// make_preference_loaders (loader.h): preference records read, encoded once as TRL encodes them, then
// collated per batch into chosen-then-rejected rows by the loader's workers.
#include "data/hold_out.h"
#include "data/loader.h"
#include "util/error.h"
#include "util/log.h"

namespace hftrain::data {
namespace {

class PreferenceSource final : public BatchSource {
 public:
  PreferenceSource(std::vector<EncodedPair> pairs, int32_t pad_id, int64_t pad_to_multiple_of)
      : pairs_(std::move(pairs)), pad_id_(pad_id), multiple_(pad_to_multiple_of) {}
  uint64_t num_samples() const override { return pairs_.size(); }
  HostBatch collate(std::span<const uint64_t> sample_ids) const override {
    return collate_pairs(pairs_, sample_ids, pad_id_, multiple_);
  }

 private:
  std::vector<EncodedPair> pairs_;
  int32_t pad_id_;
  int64_t multiple_;
};

// The records encoded under the limits by `encode` (nullopt: dropped); logs what the limits cut and
// dropped (`split` names the split).
template <typename Record, typename Encode>
auto encode_all(const std::vector<Record>& records, const PreferenceOptions& o, const char* split, Encode encode) {
  std::vector<typename decltype(encode(records.front()))::value_type> out;
  size_t truncated = 0, dropped = 0;
  for (const Record& r : records) {
    auto encoded = encode(r);
    if (!encoded) {
      ++dropped;
      continue;
    }
    truncated += encoded->truncated ? 1 : 0;
    out.push_back(std::move(*encoded));
  }
  if (truncated > 0 || dropped > 0) {
    util::log::info("preference data (" + std::string(split) + "): " + std::to_string(truncated) + " of " +
                    std::to_string(records.size()) + " records cut to data.seq_len=" +
                    std::to_string(o.limits.seq_len) +
                    (o.limits.max_prompt_len > 0
                         ? " (prompts to data.max_prompt_len=" + std::to_string(o.limits.max_prompt_len) + ")"
                         : std::string()) +
                    ", " + std::to_string(dropped) + " dropped: " +
                    (o.limits.drop_long ? "a sequence is longer (a reward model scores whole sequences)"
                                        : "their prompt alone fills a sequence"));
  }
  return out;
}

std::vector<EncodedPair> encode_pairs(const std::vector<PreferenceRecord>& records, const PreferenceOptions& o,
                                      const tokenizer::Tokenizer& tokenizer, const char* split) {
  return encode_all(records, o, split,
                    [&](const PreferenceRecord& r) { return encode_pair(tokenizer, o.chat_template, r, o.limits); });
}

template <typename Record, typename Read>
std::vector<Record> read_files(const std::vector<std::filesystem::path>& files, Read read) {
  std::vector<Record> out;
  for (const auto& file : files) {
    std::vector<Record> part = read(file);
    out.insert(out.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
  }
  return out;
}

void require_some(bool empty, const PreferenceOptions& options) {
  if (!empty) return;
  throw util::DataError("no preference record fits data.seq_len=" + std::to_string(options.limits.seq_len) +
                            (options.limits.drop_long ? ": every pair has a longer sequence"
                                                      : ": every prompt alone fills a sequence"),
                        "raise data.seq_len, or set data.max_prompt_len to keep the prompts' ends");
}

class KtoSource final : public BatchSource {
 public:
  KtoSource(std::vector<KtoExample> examples, int32_t pad_id, int64_t seq_len, int64_t pad_to_multiple_of)
      : examples_(std::move(examples)), pad_id_(pad_id), seq_len_(seq_len), multiple_(pad_to_multiple_of) {}
  uint64_t num_samples() const override { return examples_.size(); }
  HostBatch collate(std::span<const uint64_t> sample_ids) const override {
    return collate_kto(examples_, sample_ids, pad_id_, seq_len_, multiple_);
  }

 private:
  std::vector<KtoExample> examples_;
  int32_t pad_id_;
  int64_t seq_len_, multiple_;
};

}  // namespace

PreferencePairs encode_preference(const PreferenceOptions& options, const tokenizer::Tokenizer& tokenizer) {
  const auto read = [&](const std::filesystem::path& f) { return read_preference(f, options.fields); };
  std::vector<PreferenceRecord> train = read_files<PreferenceRecord>(options.train, read);
  std::vector<PreferenceRecord> validation = read_files<PreferenceRecord>(options.validation, read);
  hold_out(train, validation, options.validation, options.validation_fraction, options.split_seed);
  PreferencePairs out;
  out.train = encode_pairs(train, options, tokenizer, "training");
  require_some(out.train.empty(), options);
  out.validation = encode_pairs(validation, options, tokenizer, "validation");
  return out;
}

Loaders preference_loaders(PreferencePairs pairs, const PreferenceOptions& options, const LoaderOptions& loader,
                           int32_t pad_id, torch::Device device) {
  Loaders out;
  out.train = std::make_unique<DataLoader>(
      std::make_shared<PreferenceSource>(std::move(pairs.train), pad_id, options.pad_to_multiple_of), loader, device);
  if (!pairs.validation.empty()) {
    LoaderOptions v = loader;
    v.sampler.shuffle = false;
    v.wrap = false;
    out.validation = std::make_unique<DataLoader>(
        std::make_shared<PreferenceSource>(std::move(pairs.validation), pad_id, options.pad_to_multiple_of), v,
        device);
  }
  return out;
}

Loaders make_kto_loaders(const KtoOptions& options, const LoaderOptions& loader, const tokenizer::Tokenizer& tokenizer,
                         torch::Device device) {
  const PreferenceOptions& p = options.preference;
  const auto read = [&](const std::filesystem::path& f) { return read_kto(f, options.fields); };
  std::vector<KtoRecord> train = read_files<KtoRecord>(p.train, read);
  std::vector<KtoRecord> validation = read_files<KtoRecord>(p.validation, read);
  hold_out(train, validation, p.validation, p.validation_fraction, p.split_seed);
  const auto encode = [&](const KtoRecord& r) { return encode_kto(tokenizer, p.chat_template, r, p.limits); };
  std::vector<KtoExample> train_examples = encode_all(train, p, "training", encode);
  require_some(train_examples.empty(), p);
  std::vector<KtoExample> validation_examples = encode_all(validation, p, "validation", encode);
  const int32_t pad = tokenizer.pad_id();
  Loaders out;
  out.train = std::make_unique<DataLoader>(
      std::make_shared<KtoSource>(std::move(train_examples), pad, p.limits.seq_len, p.pad_to_multiple_of), loader,
      device);
  if (!validation_examples.empty()) {
    LoaderOptions v = loader;
    v.sampler.shuffle = false;
    v.wrap = false;
    out.validation = std::make_unique<DataLoader>(
        std::make_shared<KtoSource>(std::move(validation_examples), pad, p.limits.seq_len, p.pad_to_multiple_of), v,
        device);
  }
  return out;
}

Loaders make_preference_loaders(const PreferenceOptions& options, const LoaderOptions& loader,
                                const tokenizer::Tokenizer& tokenizer, torch::Device device) {
  return preference_loaders(encode_preference(options, tokenizer), options, loader, tokenizer.pad_id(), device);
}

}  // namespace hftrain::data
