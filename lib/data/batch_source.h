// What a DataLoader draws batches from: a number of samples, and the collate of any of them into
// a host batch. Language modelling collates packed or padded token blocks (token_batch_source);
// classification pads labelled examples (classification_batch.h). collate() is called from the
// loader's worker threads at once, so it must not change the source.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "data/dataset.h"
#include "data/mixture.h"
#include "data/packing.h"

namespace hftrain::data {

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual uint64_t num_samples() const = 0;
  virtual HostBatch collate(std::span<const uint64_t> sample_ids) const = 0;

  // A weighted mixture: each source's sample count and weight, in order; the sample ids are the
  // sources' samples one after another, and the loader draws them with a MixtureSampler. Empty
  // for anything else.
  virtual std::vector<MixtureSource> mixture() const { return {}; }
  // A mixture's source of a sample id, and the tokens that sample puts in a row (no padding).
  virtual size_t source_of(uint64_t /*sample_id*/) const { return 0; }
  virtual uint64_t sample_tokens(uint64_t /*sample_id*/) const { return 0; }
};

// The blocks of `dataset` as `packing` cuts them (SampleIndex), padded with pad_id.
std::shared_ptr<const BatchSource> token_batch_source(std::shared_ptr<const TokenDataset> dataset,
                                                      const PackingOptions& packing, int32_t pad_id);

// A weighted mixture of `sources`: each cut into blocks on its own (a row never mixes sources).
std::shared_ptr<const BatchSource> mixture_batch_source(const std::vector<SourceDataset>& sources,
                                                        const PackingOptions& packing, int32_t pad_id);

}  // namespace hftrain::data
