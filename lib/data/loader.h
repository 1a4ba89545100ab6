// The data loader the training loop pulls batches from: dataset + packing + sampler, with
// background workers that prepare batches ahead (in pinned memory when the device is CUDA) and
// a host-to-device copy that does not block. Its position is one global cursor (samples served
// since the start of training); seek(cursor) resumes exactly there, in O(1).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include <torch/types.h>

#include "data/batch_source.h"
#include "data/classification_batch.h"
#include "data/kto.h"
#include "data/preference.h"
#include "data/dataset.h"
#include "data/labelled.h"
#include "data/packing.h"
#include "data/prefetcher.h"
#include "data/sampler.h"
#include "tokenizer/tokenizer.h"

namespace hftrain::data {

struct LoaderOptions {
  int64_t batch_size = 8;        // B (trainer.micro_batch_size)
  SamplerOptions sampler{};      // seed, shuffle
  int64_t prefetch_batches = 4;  // batches prepared ahead; 0 = synchronous loading
  int64_t num_workers = 2;       // threads preparing batches (with prefetch_batches > 0)
  bool pin_memory = true;        // page-locked host buffers when the device is CUDA
  // Data parallelism: a global batch is world_size x batch_size consecutive samples and rank r
  // takes the r-th slice, so the cursor stays global (a resume on another world size continues
  // at the same sample).
  int rank = 0;
  int world_size = 1;
  // false (evaluation): a batch's rows past the last sample of the first epoch carry no labels,
  // so that a pass of batches_per_epoch() counts every sample exactly once.
  bool wrap = true;
};

struct DataOptions {
  DatasetOptions dataset;
  PackingOptions packing;
  LoaderOptions loader;
};

struct Batch {
  torch::Tensor input_ids;       // (B, T) int64 on the device
  torch::Tensor labels;          // (B, T) int64: labels[:, t] is the target at position t (the
                                 // next token, already shifted); -100 = no loss. Classification:
                                 // (B), each sequence's class
  torch::Tensor attention_mask;  // (B, T) int64: 1 = token, 0 = padding
  torch::Tensor token_type_ids;  // (B, T) int64 segment ids (classification of text pairs), or undefined
  torch::Tensor position_ids;    // (B, T) int64 positions restarting at each packed document
                                 // (data.document_mask), or undefined: 0..T-1 in every row
  torch::Tensor document_offsets;  // (D + 1) int32 with position_ids: where each of the batch's D
                                   // documents starts in the flattened (B * T) tokens, then B * T;
                                   // found on the host, so the attention needs no device read
                                   // (model/decoder/document_mask.h's DocumentLayout)
  torch::Tensor margins;  // (pairs) float32: preference pairs' reward margins (data.margin_field), or undefined
  torch::Tensor reference_logps;   // (rows) float32: preference rows' precomputed reference log-probs, or undefined
  torch::Tensor desirable;         // (examples) bool: KTO's labels, or undefined
  int64_t num_target_tokens = 0;  // labels != -100 (classification: sequences), counted on the host
  // A weighted mixture: the tokens (padding not counted) each source put in the global batch (all
  // ranks' rows), counted on the host from the sample order; empty otherwise.
  std::vector<uint64_t> source_tokens;
  uint64_t cursor = 0;            // the global cursor of the batch's first sample
  uint64_t epoch = 0;             // the epoch of the batch's first sample
};

class DataLoader {
 public:
  DataLoader(std::shared_ptr<const BatchSource> source, const LoaderOptions& options, torch::Device device);
  DataLoader(std::shared_ptr<const TokenDataset> dataset, const PackingOptions& packing,
             const LoaderOptions& options, int32_t pad_id, torch::Device device);
  // The training split of `options` (datasets built, or mapped from the token cache, here).
  DataLoader(const DataOptions& options, const tokenizer::Tokenizer& tokenizer, torch::Device device);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // The next batch; batches run on across epoch boundaries (no sample is dropped or repeated).
  Batch next();
  // Samples served so far by all ranks (what a checkpoint stores) and jumping there.
  uint64_t cursor() const { return cursor_; }
  void seek(uint64_t cursor);
  uint64_t epoch() const { return sampler_.epoch_of(cursor_); }
  // A weighted mixture: the passes made over each source so far (fractional), in source order;
  // empty otherwise.
  std::vector<double> source_epochs() const;

  uint64_t num_samples() const { return source_->num_samples(); }
  // Global batches per epoch, optimizer-independent: ceil(num_samples / (batch_size x world_size)).
  uint64_t batches_per_epoch() const;
  int64_t batch_size() const { return options_.batch_size; }

  // Seconds next() spent waiting for data: in total, in the last call, and per batch on average.
  double data_wait_seconds() const { return wait_total_; }
  double last_wait_seconds() const { return wait_last_; }
  double mean_wait_seconds() const { return batches_ == 0 ? 0.0 : wait_total_ / static_cast<double>(batches_); }
  // Batches assembled so far, by next() or ahead of it by the workers (a seek discards those
  // prepared ahead): what a resume would cost if it replayed data.
  uint64_t batches_produced() const { return produced_.load(); }

 private:
  struct HostTensors {
    torch::Tensor input_ids, labels, attention_mask, token_type_ids, position_ids;  // on the host, pinned for CUDA
    torch::Tensor document_offsets;
    torch::Tensor margins, reference_logps, desirable;
    int64_t num_target_tokens = 0;
    uint64_t cursor = 0;
  };
  HostTensors produce(uint64_t cursor) const;
  void restart();

  std::shared_ptr<const BatchSource> source_;
  LoaderOptions options_;
  torch::Device device_;
  Sampler sampler_;
  uint64_t cursor_ = 0;
  std::unique_ptr<Prefetcher<HostTensors>> prefetcher_;
  double wait_total_ = 0;
  double wait_last_ = 0;
  uint64_t batches_ = 0;
  mutable std::atomic<uint64_t> produced_{0};
};

// Both splits of `options`, sharing one build of the datasets. The validation loader does not
// shuffle; it is null when there is no validation split.
struct Loaders {
  std::unique_ptr<DataLoader> train;
  std::unique_ptr<DataLoader> validation;
  // Validation sources evaluated one by one (Datasets::validation_sources), by name.
  std::vector<std::pair<std::string, std::unique_ptr<DataLoader>>> validation_sources;
  Datasets datasets;  // language modelling
  PackingOptions packing;  // how the language-modelling samples are cut (document masking included)
  LabelSet labels;    // classification: the classes (tagging: the tags), by id
  bool tagging = false;  // token classification: evaluation reports entity-level metrics
};
Loaders make_loaders(const DataOptions& options, const tokenizer::Tokenizer& tokenizer, torch::Device device);

// Sequence classification: labelled records (labelled.h) encoded and padded per batch; token
// classification (tagging): tagged sentences (tagged.h), one label per word on its first piece.
struct ClassificationOptions {
  bool tagging = false;  // token classification: `tagged` reads the files, `records` is unused
  TaggedOptions tagged;
  std::vector<std::filesystem::path> train;       // CSV / TSV / JSONL files
  std::vector<std::filesystem::path> validation;  // empty: validation_fraction of train
  double validation_fraction = 0.0;
  uint64_t split_seed = 0;
  LabelledOptions records;
  int64_t max_length = 128;  // tokens per example, special tokens included (truncated beyond)
  int64_t pad_to_multiple_of = 1;
  std::optional<LabelSet> labels;  // fixed (a model with a classifier); else from the training data
};
// Throws DataError naming the file and line for bad records or labels.
Loaders make_classification_loaders(const ClassificationOptions& options, const LoaderOptions& loader,
                                    const tokenizer::Tokenizer& tokenizer, torch::Device device);

// Preference pairs (preference.h): records read and encoded once, collated per batch into 2B rows.
struct PreferenceOptions {
  std::vector<std::filesystem::path> train;       // JSONL files
  std::vector<std::filesystem::path> validation;  // empty: validation_fraction of train
  double validation_fraction = 0.0;
  uint64_t split_seed = 0;
  PreferenceFields fields;
  PreferenceLimits limits;
  int64_t pad_to_multiple_of = 1;
  const tokenizer::ChatTemplate* chat_template = nullptr;  // conversational records; null: none
};
// The pairs of both splits, read and encoded (encode_preference), before they become loaders
// (preference_loaders): a precomputed reference fills their reference_logps in between.
struct PreferencePairs {
  std::vector<EncodedPair> train, validation;
};
// Logs how many pairs were cut or dropped by the limits. Throws DataError naming the file and line for
// bad records, and when no pair is left.
PreferencePairs encode_preference(const PreferenceOptions& options, const tokenizer::Tokenizer& tokenizer);
Loaders preference_loaders(PreferencePairs pairs, const PreferenceOptions& options, const LoaderOptions& loader,
                           int32_t pad_id, torch::Device device);
// KTO's unpaired examples (kto.h): the files read, held out and encoded as preference pairs are, then
// collated with their KL rows. Logs what the limits cut and dropped; DataError for bad records and
// when no example is left.
struct KtoOptions {
  PreferenceOptions preference;  // files, split, limits, chat template
  KtoFields fields;
};
Loaders make_kto_loaders(const KtoOptions& options, const LoaderOptions& loader, const tokenizer::Tokenizer& tokenizer,
                         torch::Device device);
// The two in one.
Loaders make_preference_loaders(const PreferenceOptions& options, const LoaderOptions& loader,
                                const tokenizer::Tokenizer& tokenizer, torch::Device device);

}  // namespace hftrain::data
