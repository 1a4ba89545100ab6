#include "data/loader.h"

#include <chrono>
#include <cstring>

#include "util/error.h"

namespace hftrain::data {
namespace {

torch::Tensor host_tensor(const std::vector<int64_t>& values, int64_t rows, int64_t cols, bool pinned) {
  auto options = torch::TensorOptions().dtype(torch::kInt64).pinned_memory(pinned);
  torch::Tensor t = torch::empty({rows, cols}, options);  // (B, T)
  std::memcpy(t.data_ptr<int64_t>(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

// Where each packed document starts (a position 0; packed rows always begin with one) in the
// flattened positions, then their count: the cu_seqlens of variable-length attention.
torch::Tensor document_offsets(const std::vector<int64_t>& positions, bool pinned) {
  std::vector<int32_t> starts;
  for (size_t i = 0; i < positions.size(); ++i) {
    if (positions[i] == 0) starts.push_back(static_cast<int32_t>(i));
  }
  starts.push_back(static_cast<int32_t>(positions.size()));
  torch::Tensor t = torch::empty({static_cast<int64_t>(starts.size())},
                                 torch::TensorOptions().dtype(torch::kInt32).pinned_memory(pinned));
  std::memcpy(t.data_ptr<int32_t>(), starts.data(), starts.size() * sizeof(int32_t));
  return t;
}

LoaderOptions checked(const LoaderOptions& options) {
  if (options.batch_size < 1) throw util::ConfigError("the batch size must be at least 1");
  if (options.prefetch_batches < 0) throw util::ConfigError("prefetch_batches must be 0 or more");
  if (options.num_workers < 1) throw util::ConfigError("num_workers must be at least 1");
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    throw util::ConfigError("rank " + std::to_string(options.rank) + " is outside a world of " +
                            std::to_string(options.world_size));
  }
  return options;
}

// Rows whose sample lies past the first epoch (cursor + sample >= n) lose their labels (a pair both
// of its rows, and its count: such batches count samples, not tokens).
void mask_past_end(HostBatch& batch, uint64_t cursor, uint64_t n) {
  const int64_t samples = batch.batch_size / batch.rows_per_sample;
  if (cursor + static_cast<uint64_t>(samples) <= n) return;
  const int64_t per_row = batch.sequence_labels ? 1 : batch.seq_len;
  for (int64_t row = 0; row < batch.batch_size; ++row) {
    if (cursor + static_cast<uint64_t>(row % samples) < n) continue;
    if (batch.rows_per_sample > 1 && row < samples) --batch.num_target_tokens;
    for (int64_t j = row * per_row; j < (row + 1) * per_row; ++j) {
      if (batch.rows_per_sample == 1 && batch.labels[static_cast<size_t>(j)] != kIgnoreIndex) {
        --batch.num_target_tokens;
      }
      batch.labels[static_cast<size_t>(j)] = kIgnoreIndex;
    }
  }
}

Sampler make_sampler(const BatchSource& source, const SamplerOptions& options) {
  std::vector<MixtureSource> mixture = source.mixture();
  if (mixture.empty()) return Sampler(source.num_samples(), options);
  return Sampler(std::make_shared<const MixtureSampler>(std::move(mixture), options));
}

}  // namespace

DataLoader::DataLoader(std::shared_ptr<const BatchSource> source, const LoaderOptions& options, torch::Device device)
    : source_(std::move(source)),
      options_(checked(options)),
      device_(device),
      sampler_(make_sampler(*source_, options_.sampler)) {
  restart();
}

DataLoader::DataLoader(std::shared_ptr<const TokenDataset> dataset, const PackingOptions& packing,
                       const LoaderOptions& options, int32_t pad_id, torch::Device device)
    : DataLoader(token_batch_source(std::move(dataset), packing, pad_id), options, device) {}

namespace {

// The training split as batches: one dataset, or a weighted mixture of sources.
std::shared_ptr<const BatchSource> training_source(const Datasets& d, const PackingOptions& packing, int32_t pad_id) {
  if (d.train_sources.empty()) return token_batch_source(d.train, packing, pad_id);
  return mixture_batch_source(d.train_sources, packing, pad_id);
}

}  // namespace

DataLoader::DataLoader(const DataOptions& options, const tokenizer::Tokenizer& tokenizer, torch::Device device)
    : DataLoader(training_source(build_datasets(options.dataset, tokenizer), options.packing, tokenizer.pad_id()),
                 options.loader, device) {}

DataLoader::~DataLoader() = default;

uint64_t DataLoader::batches_per_epoch() const {
  const auto b = static_cast<uint64_t>(options_.batch_size) * static_cast<uint64_t>(options_.world_size);
  return (source_->num_samples() + b - 1) / b;
}

DataLoader::HostTensors DataLoader::produce(uint64_t cursor) const {
  ++produced_;
  const auto b = static_cast<uint64_t>(options_.batch_size);
  std::vector<uint64_t> ids(b);
  for (uint64_t i = 0; i < b; ++i) ids[i] = sampler_.sample_at(cursor + i);
  HostBatch batch = source_->collate(ids);
  if (!options_.wrap) mask_past_end(batch, cursor, source_->num_samples());
  // Pinned (page-locked) buffers let the copy to the GPU run asynchronously.
  const bool pinned = options_.pin_memory && device_.is_cuda();
  HostTensors out;
  out.input_ids = host_tensor(batch.input_ids, batch.batch_size, batch.seq_len, pinned);
  out.labels = batch.sequence_labels ? host_tensor(batch.labels, batch.batch_size, 1, pinned).view({-1})
                                     : host_tensor(batch.labels, batch.batch_size, batch.seq_len, pinned);
  out.attention_mask = host_tensor(batch.attention_mask, batch.batch_size, batch.seq_len, pinned);
  if (!batch.token_type_ids.empty()) {
    out.token_type_ids = host_tensor(batch.token_type_ids, batch.batch_size, batch.seq_len, pinned);
  }
  if (!batch.position_ids.empty()) {
    out.position_ids = host_tensor(batch.position_ids, batch.batch_size, batch.seq_len, pinned);
    out.document_offsets = document_offsets(batch.position_ids, pinned);
  }
  const auto floats = [](std::vector<float>& v) {
    return torch::from_blob(v.data(), {static_cast<int64_t>(v.size())}, torch::kFloat32).clone();
  };
  if (!batch.margins.empty()) out.margins = floats(batch.margins);
  if (!batch.reference_logps.empty()) out.reference_logps = floats(batch.reference_logps);
  if (!batch.desirable.empty()) {
    out.desirable =
        torch::from_blob(batch.desirable.data(), {static_cast<int64_t>(batch.desirable.size())}, torch::kUInt8)
            .to(torch::kBool);
  }
  out.num_target_tokens = batch.num_target_tokens;
  out.cursor = cursor;
  return out;
}

std::vector<double> DataLoader::source_epochs() const {
  const MixtureSampler* mixture = sampler_.mixture();
  if (!mixture) return {};
  const std::vector<uint64_t> draws = mixture->draws_before(cursor_);
  const std::vector<MixtureSource> sources = source_->mixture();
  std::vector<double> out;
  for (size_t s = 0; s < draws.size(); ++s) {
    out.push_back(static_cast<double>(draws[s]) / static_cast<double>(sources[s].num_samples));
  }
  return out;
}

void DataLoader::restart() {
  prefetcher_.reset();
  if (options_.prefetch_batches == 0) return;
  const auto b = static_cast<uint64_t>(options_.batch_size);
  const uint64_t base = cursor_ + static_cast<uint64_t>(options_.rank) * b;
  const uint64_t stride = b * static_cast<uint64_t>(options_.world_size);
  prefetcher_ = std::make_unique<Prefetcher<HostTensors>>(
      [this, base, stride](uint64_t k) { return produce(base + k * stride); },
      static_cast<size_t>(options_.prefetch_batches), static_cast<size_t>(options_.num_workers));
}

void DataLoader::seek(uint64_t cursor) {
  // O(1): the sampler computes any position directly; only the batches already prepared ahead
  // are thrown away.
  cursor_ = cursor;
  restart();
}

Batch DataLoader::next() {
  const auto start = std::chrono::steady_clock::now();
  const auto b = static_cast<uint64_t>(options_.batch_size);
  HostTensors host = prefetcher_ ? prefetcher_->take() : produce(cursor_ + static_cast<uint64_t>(options_.rank) * b);
  Batch batch;
  const bool async = host.input_ids.is_pinned();
  batch.input_ids = host.input_ids.to(device_, /*non_blocking=*/async);
  batch.labels = host.labels.to(device_, async);
  batch.attention_mask = host.attention_mask.to(device_, async);
  if (host.token_type_ids.defined()) batch.token_type_ids = host.token_type_ids.to(device_, async);
  if (host.position_ids.defined()) batch.position_ids = host.position_ids.to(device_, async);
  if (host.document_offsets.defined()) batch.document_offsets = host.document_offsets.to(device_, async);
  if (host.margins.defined()) batch.margins = host.margins.to(device_);
  if (host.reference_logps.defined()) batch.reference_logps = host.reference_logps.to(device_);
  if (host.desirable.defined()) batch.desirable = host.desirable.to(device_);
  batch.num_target_tokens = host.num_target_tokens;
  if (const MixtureSampler* mixture = sampler_.mixture()) {
    batch.source_tokens.assign(mixture->num_sources(), 0);
    const uint64_t first = host.cursor - static_cast<uint64_t>(options_.rank) * b;
    for (uint64_t c = first; c < first + b * static_cast<uint64_t>(options_.world_size); ++c) {
      const uint64_t id = mixture->sample_at(c);
      batch.source_tokens[source_->source_of(id)] += source_->sample_tokens(id);
    }
  }
  batch.cursor = host.cursor;
  batch.epoch = sampler_.epoch_of(host.cursor);
  // The next global batch: past this one's slices of every rank.
  cursor_ = host.cursor - static_cast<uint64_t>(options_.rank) * b + b * static_cast<uint64_t>(options_.world_size);
  wait_last_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  wait_total_ += wait_last_;
  ++batches_;
  return batch;
}

Loaders make_loaders(const DataOptions& options, const tokenizer::Tokenizer& tokenizer, torch::Device device) {
  Loaders out;
  out.datasets = build_datasets(options.dataset, tokenizer);
  out.packing = options.packing;
  out.train = std::make_unique<DataLoader>(training_source(out.datasets, options.packing, tokenizer.pad_id()),
                                           options.loader, device);
  LoaderOptions validation = options.loader;
  validation.sampler.shuffle = false;
  validation.wrap = false;
  if (out.datasets.validation) {
    out.validation = std::make_unique<DataLoader>(out.datasets.validation, options.packing, validation,
                                                  tokenizer.pad_id(), device);
  }
  const bool held_out = options.dataset.validation.empty();
  for (const auto& source : out.datasets.validation_sources) {
    try {
      out.validation_sources.emplace_back(
          source.name,
          std::make_unique<DataLoader>(source.data, options.packing, validation, tokenizer.pad_id(), device));
    } catch (const util::DataError& e) {
      throw util::DataError((held_out ? "the held-out part of data.train source `" : "data.validation source `") +
                                source.name + "`: " + e.what(),
                            held_out ? "raise data.validation_fraction, or name validation files in data.validation"
                                     : e.hint());
    }
  }
  return out;
}

}  // namespace hftrain::data
