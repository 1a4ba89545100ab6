// What a DataLoader draws batches from: a number of samples, and the collate of any of them into
// a host batch. Language modelling collates packed or padded token blocks (token_batch_source);
// classification pads labelled examples (classification_data.h). collate() is called from the
// loader's worker threads at once, so it must not change the source.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "data/dataset.h"
#include "data/packing.h"

namespace hftrain::data {

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual uint64_t num_samples() const = 0;
  virtual HostBatch collate(std::span<const uint64_t> sample_ids) const = 0;
};

// The blocks of `dataset` as `packing` cuts them (SampleIndex), padded with pad_id.
std::shared_ptr<const BatchSource> token_batch_source(std::shared_ptr<const TokenDataset> dataset,
                                                      const PackingOptions& packing, int32_t pad_id);

}  // namespace hftrain::data
