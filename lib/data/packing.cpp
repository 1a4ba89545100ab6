#include "data/packing.h"

#include <algorithm>

#include "util/error.h"

namespace hftrain::data {

SampleIndex::SampleIndex(const TokenDataset& dataset, const PackingOptions& options) : options_(options) {
  if (options.seq_len < 1) throw util::ConfigError("seq_len must be at least 1");
  if (options.pad_to_multiple_of < 1) throw util::ConfigError("pad_to_multiple_of must be at least 1");
  const auto t = static_cast<uint64_t>(options.seq_len);
  if (options.mode == PackingMode::kPack) {
    size_ = dataset.num_tokens() > t ? (dataset.num_tokens() - 1) / t : 0;
    if (size_ == 0) {
      throw util::DataError("the data holds " + std::to_string(dataset.num_tokens()) +
                                " tokens, too few for one packed sample of seq_len " + std::to_string(t) + " + 1",
                            "add data or lower seq_len");
    }
    return;
  }
  // One sample per document piece; a document longer than seq_len + 1 is cut into pieces that
  // overlap by one token, so that every next-token target is trained on exactly once.
  uint64_t virtual_start = 0;
  for (const Piece& piece : dataset.pieces()) {
    auto starts = dataset.corpus(piece.corpus).doc_starts();
    uint64_t pos = piece.begin;
    while (pos < piece.end) {
      auto next = std::upper_bound(starts.begin(), starts.end(), pos);
      uint64_t doc_end = next == starts.end() ? piece.end : std::min(*next, piece.end);
      for (uint64_t k = pos; k + 1 < doc_end; k += t) {
        refs_.push_back(SampleRef{virtual_start + (k - piece.begin), std::min(t + 1, doc_end - k)});
      }
      pos = doc_end;
    }
    virtual_start += piece.end - piece.begin;
  }
  size_ = refs_.size();
  if (size_ == 0) {
    throw util::DataError("the data holds no document with at least two tokens", "add data");
  }
}

SampleRef SampleIndex::operator[](uint64_t i) const {
  if (options_.mode == PackingMode::kPack) {
    const auto t = static_cast<uint64_t>(options_.seq_len);
    return SampleRef{i * t, t + 1};
  }
  return refs_[i];
}

HostBatch collate(const TokenDataset& dataset, const SampleIndex& index, std::span<const uint64_t> sample_ids,
                  const PackingOptions& options, int32_t pad_id) {
  std::vector<RowRef> rows;
  rows.reserve(sample_ids.size());
  for (uint64_t id : sample_ids) rows.push_back(RowRef{&dataset, index[id]});
  return collate_rows(rows, sample_ids, options, pad_id);
}

HostBatch collate_rows(std::span<const RowRef> rows, std::span<const uint64_t> sample_ids,
                       const PackingOptions& options, int32_t pad_id) {
  HostBatch batch;
  batch.batch_size = static_cast<int64_t>(rows.size());
  batch.sample_ids.assign(sample_ids.begin(), sample_ids.end());
  uint64_t longest = 0;
  for (const RowRef& row : rows) longest = std::max(longest, row.sample.length - 1);
  int64_t t = options.seq_len;
  if (options.mode == PackingMode::kPad) {
    const auto m = static_cast<uint64_t>(options.pad_to_multiple_of);
    t = static_cast<int64_t>((longest + m - 1) / m * m);
  }
  batch.seq_len = t;
  const size_t cells = static_cast<size_t>(batch.batch_size * t);
  batch.input_ids.assign(cells, pad_id);
  batch.labels.assign(cells, kIgnoreIndex);
  batch.attention_mask.assign(cells, 0);
  std::vector<int64_t> tokens(static_cast<size_t>(options.seq_len) + 1);
  std::vector<uint8_t> train(tokens.size());
  const bool split_docs = options.document_mask && options.mode == PackingMode::kPack;
  std::vector<uint8_t> starts(split_docs ? tokens.size() : 0);
  std::vector<int64_t> positions(split_docs ? cells : 0);
  bool any_boundary = false;
  for (size_t b = 0; b < rows.size(); ++b) {
    const SampleRef& ref = rows[b].sample;
    rows[b].dataset->read(ref.begin, ref.length, tokens.data(), train.data(), split_docs ? starts.data() : nullptr);
    const size_t row = b * static_cast<size_t>(t);
    const size_t n = ref.length - 1;  // positions with a next-token target
    int64_t position = 0;
    for (size_t i = 0; i < n; ++i) {
      batch.input_ids[row + i] = tokens[i];
      batch.attention_mask[row + i] = 1;
      if (split_docs) {
        if (i > 0 && starts[i]) {
          position = 0;
          any_boundary = true;
        }
        positions[row + i] = position++;
        if (starts[i + 1]) continue;  // the next token opens another document: no target
      }
      if (train[i + 1]) {
        batch.labels[row + i] = tokens[i + 1];
        ++batch.num_target_tokens;
      }
    }
  }
  if (any_boundary) batch.position_ids = std::move(positions);
  return batch;
}

}  // namespace hftrain::data
