#include "data/batch_source.h"

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

}  // namespace

std::shared_ptr<const BatchSource> token_batch_source(std::shared_ptr<const TokenDataset> dataset,
                                                      const PackingOptions& packing, int32_t pad_id) {
  return std::make_shared<TokenBatchSource>(std::move(dataset), packing, pad_id);
}

}  // namespace hftrain::data
