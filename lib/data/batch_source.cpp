#include "data/batch_source.h"

#include <algorithm>

#include "util/error.h"

namespace hftrain::data {
namespace {

class TokenBatchSource final : public BatchSource {
 public:
  TokenBatchSource(std::shared_ptr<const TokenDataset> dataset, const PackingOptions& packing, int32_t pad_id)
      : dataset_(std::move(dataset)), packing_(packing), pad_id_(pad_id), index_(*dataset_, packing_) {}
  uint64_t num_samples() const override { return index_.size(); }
  HostBatch collate(std::span<const uint64_t> sample_ids) const override {
    return data::collate(*dataset_, index_, sample_ids, packing_, pad_id_);
  }

 private:
  std::shared_ptr<const TokenDataset> dataset_;
  PackingOptions packing_;
  int32_t pad_id_;
  SampleIndex index_;
};

class MixtureBatchSource final : public BatchSource {
 public:
  MixtureBatchSource(const std::vector<SourceDataset>& sources, const PackingOptions& packing, int32_t pad_id)
      : packing_(packing), pad_id_(pad_id) {
    for (const auto& s : sources) {
      datasets_.push_back(s.data);
      try {
        indexes_.emplace_back(*s.data, packing_);
      } catch (const util::DataError& e) {
        throw util::DataError("data.train source `" + s.name + "`: " + e.what(), e.hint());
      }
      starts_.push_back(total_);
      total_ += indexes_.back().size();
      weights_.push_back(s.weight);
    }
  }
  uint64_t num_samples() const override { return total_; }
  HostBatch collate(std::span<const uint64_t> sample_ids) const override {
    std::vector<RowRef> rows;
    rows.reserve(sample_ids.size());
    for (uint64_t id : sample_ids) {
      const size_t s = source_of(id);
      rows.push_back(RowRef{datasets_[s].get(), indexes_[s][id - starts_[s]]});
    }
    return collate_rows(rows, sample_ids, packing_, pad_id_);
  }
  std::vector<MixtureSource> mixture() const override {
    std::vector<MixtureSource> out;
    for (size_t s = 0; s < indexes_.size(); ++s) out.push_back({indexes_[s].size(), weights_[s]});
    return out;
  }
  size_t source_of(uint64_t id) const override {
    return static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), id) - starts_.begin()) - 1;
  }
  uint64_t sample_tokens(uint64_t id) const override {
    const size_t s = source_of(id);
    return indexes_[s][id - starts_[s]].length - 1;
  }

 private:
  PackingOptions packing_;
  int32_t pad_id_;
  std::vector<std::shared_ptr<const TokenDataset>> datasets_;
  std::vector<SampleIndex> indexes_;
  std::vector<uint64_t> starts_;  // first sample id of each source
  std::vector<double> weights_;
  uint64_t total_ = 0;
};

}  // namespace

std::shared_ptr<const BatchSource> mixture_batch_source(const std::vector<SourceDataset>& sources,
                                                        const PackingOptions& packing, int32_t pad_id) {
  return std::make_shared<MixtureBatchSource>(sources, packing, pad_id);
}

std::shared_ptr<const BatchSource> token_batch_source(std::shared_ptr<const TokenDataset> dataset,
                                                      const PackingOptions& packing, int32_t pad_id) {
  return std::make_shared<TokenBatchSource>(std::move(dataset), packing, pad_id);
}

}  // namespace hftrain::data
