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

// The records' pairs under the limits; logs what the limits cut and dropped (`split` names the split).
std::vector<EncodedPair> encode_all(const std::vector<PreferenceRecord>& records, const PreferenceOptions& o,
                                    const tokenizer::Tokenizer& tokenizer, const char* split) {
  std::vector<EncodedPair> out;
  size_t truncated = 0, dropped = 0;
  for (const PreferenceRecord& r : records) {
    std::optional<EncodedPair> pair = encode_pair(tokenizer, o.chat_template, r, o.limits);
    if (!pair) {
      ++dropped;
      continue;
    }
    truncated += pair->truncated ? 1 : 0;
    out.push_back(std::move(*pair));
  }
  if (truncated > 0 || dropped > 0) {
    util::log::info("preference data (" + std::string(split) + "): " + std::to_string(truncated) + " of " +
                    std::to_string(records.size()) + " pairs cut to data.seq_len=" +
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

std::vector<PreferenceRecord> read_files(const std::vector<std::filesystem::path>& files, const PreferenceFields& f) {
  std::vector<PreferenceRecord> out;
  for (const auto& file : files) {
    std::vector<PreferenceRecord> part = read_preference(file, f);
    out.insert(out.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
  }
  return out;
}

}  // namespace

PreferencePairs encode_preference(const PreferenceOptions& options, const tokenizer::Tokenizer& tokenizer) {
  std::vector<PreferenceRecord> train = read_files(options.train, options.fields);
  std::vector<PreferenceRecord> validation = read_files(options.validation, options.fields);
  hold_out(train, validation, options.validation, options.validation_fraction, options.split_seed);
  PreferencePairs out;
  out.train = encode_all(train, options, tokenizer, "training");
  if (out.train.empty()) {
    throw util::DataError("no preference pair fits data.seq_len=" + std::to_string(options.limits.seq_len) +
                              (options.limits.drop_long ? ": every pair has a longer sequence"
                                                        : ": every prompt alone fills a sequence"),
                          "raise data.seq_len, or set data.max_prompt_len to keep the prompts' ends");
  }
  out.validation = encode_all(validation, options, tokenizer, "validation");
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

Loaders make_preference_loaders(const PreferenceOptions& options, const LoaderOptions& loader,
                                const tokenizer::Tokenizer& tokenizer, torch::Device device) {
  return preference_loaders(encode_preference(options, tokenizer), options, loader, tokenizer.pad_id(), device);
}

}  // namespace hftrain::data
