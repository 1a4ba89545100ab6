// From a token stream to fixed-shape training samples. Two modes, as in Hugging Face recipes:
//  - pack: the documents (each ending in <|endoftext|>) are one stream cut into blocks of
//    seq_len + 1 tokens that overlap by one; no padding, every position is attended.
//  - pad:  a sample is one document (a longer one is cut into seq_len pieces); a batch is padded
//    to its longest sample, rounded up to pad_to_multiple_of.
// Labels are the next token (labels[t] = token[t + 1]); a label is -100 where that token is
// padding or context only (a prompt), the way Hugging Face's loss ignores them.
// Document masking (pack mode): a packed row keeps its documents apart. Its position ids restart
// at 0 where each document (or the row) starts, the model attends only within a document (the
// attention mask is derived from the position ids), and the target after a document's last
// token (the next document's first) carries no loss. A padded sample is one document already.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "data/dataset.h"

namespace hftrain::data {

inline constexpr int64_t kIgnoreIndex = -100;

enum class PackingMode { kPack, kPad };

struct PackingOptions {
  int64_t seq_len = 1024;         // T: model positions per sample (data.seq_len)
  PackingMode mode = PackingMode::kPack;
  int64_t pad_to_multiple_of = 1;  // kPad: round the batch length up to a multiple of this
  bool document_mask = false;      // kPack: no attention or target across document boundaries
};

// A sample: `length` tokens (at most seq_len + 1) of the dataset's virtual stream from `begin`.
struct SampleRef {
  uint64_t begin = 0;
  uint64_t length = 0;
};

// The samples of a dataset. Packed samples are computed on the fly; padded ones are listed
// (one entry per document piece).
class SampleIndex {
 public:
  // Throws DataError when the dataset yields no sample (fewer than seq_len + 1 tokens to pack).
  SampleIndex(const TokenDataset& dataset, const PackingOptions& options);
  uint64_t size() const { return size_; }
  SampleRef operator[](uint64_t i) const;

 private:
  PackingOptions options_;
  uint64_t size_ = 0;
  std::vector<SampleRef> refs_;  // kPad only
};

// A batch in host memory, row-major (B, T).
struct HostBatch {
  int64_t batch_size = 0;               // B
  int64_t seq_len = 0;                  // T (the padded length in kPad mode)
  std::vector<int64_t> input_ids;       // (B, T)
  std::vector<int64_t> labels;          // (B, T), kIgnoreIndex where no loss; (B) when sequence_labels
  std::vector<int64_t> attention_mask;  // (B, T), 1 = real token, 0 = padding
  std::vector<int64_t> token_type_ids;  // (B, T) segment ids (BERT), or empty
  // (B, T) each token's position in its document (document masking), or empty: positions are
  // 0..T-1 in every row. Left empty when no row of the batch holds a document boundary.
  std::vector<int64_t> position_ids;
  bool sequence_labels = false;         // one class per sequence (classification)
  // Rows per sample: 2 for preference pairs, whose B samples fill rows i (chosen) and B + i (rejected);
  // num_target_tokens then counts the pairs (what their loss is averaged over), not tokens.
  int64_t rows_per_sample = 1;
  int64_t num_target_tokens = 0;        // labels != kIgnoreIndex (pairs: see rows_per_sample)
  std::vector<uint64_t> sample_ids;     // (B) which samples, for tests and debugging
  std::vector<float> margins;           // preference pairs: each pair's reward margin (data.margin_field), or empty
  std::vector<float> reference_logps;   // preference rows: the reference's summed log-probs, precomputed, or empty
  std::vector<uint8_t> desirable;       // KTO: each example's label (1 desirable), or empty
};

HostBatch collate(const TokenDataset& dataset, const SampleIndex& index, std::span<const uint64_t> sample_ids,
                  const PackingOptions& options, int32_t pad_id);

// One row of a batch: a sample of a dataset (rows of a mixture come from several).
struct RowRef {
  const TokenDataset* dataset = nullptr;
  SampleRef sample;
};
// The batch of `rows`; `sample_ids` (one per row) are recorded in it.
HostBatch collate_rows(std::span<const RowRef> rows, std::span<const uint64_t> sample_ids,
                       const PackingOptions& options, int32_t pad_id);

}  // namespace hftrain::data
