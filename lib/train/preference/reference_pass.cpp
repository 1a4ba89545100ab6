#include "train/preference/reference_pass.h"

#include <chrono>

#include <torch/torch.h>

#include "data/preference.h"
#include "model/weights/safetensors.h"
#include "train/preference/objectives.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/log.h"

namespace hftrain::train {
namespace {

namespace fs = std::filesystem;

// Every pair of both splits, in order: the training pairs, then the validation pairs.
std::vector<data::EncodedPair*> all_pairs(data::PreferencePairs& pairs) {
  std::vector<data::EncodedPair*> out;
  for (auto* split : {&pairs.train, &pairs.validation}) {
    for (auto& p : *split) out.push_back(&p);
  }
  return out;
}

torch::Tensor rows_tensor(const std::vector<int64_t>& values, int64_t rows, int64_t cols, const torch::Device& device) {
  return torch::tensor(values, torch::kLong).view({rows, cols}).to(device);
}

// (N, 2) the cached values, or undefined where the file is absent or does not fit N pairs.
torch::Tensor read_cache(const fs::path& file, int64_t n) {
  std::error_code ec;
  if (file.empty() || !fs::exists(file, ec)) return {};
  try {
    for (auto& [name, t] : model::read_safetensors(file)) {
      if (name == "reference_logps" && t.dim() == 2 && t.size(0) == n && t.size(1) == 2 &&
          t.scalar_type() == torch::kFloat32) {
        return t;
      }
    }
  } catch (const util::Error& e) {
    util::log::warn("preference: the reference log-prob cache " + file.string() + " is unreadable (" + e.what() +
                    "); computing them again");
  }
  return {};
}

}  // namespace

fs::path reference_cache_file(const fs::path& cache_dir, const data::PreferencePairs& pairs,
                              const std::string& weights_key) {
  util::Hasher h;
  h.update(weights_key);
  for (const auto* split : {&pairs.train, &pairs.validation}) {
    const uint64_t n = split->size();
    h.update(&n, sizeof(n));
    for (const data::EncodedPair& p : *split) {
      for (const auto* ids : {&p.prompt, &p.chosen, &p.rejected}) {
        const uint64_t len = ids->size();
        h.update(&len, sizeof(len));
        h.update(ids->data(), ids->size() * sizeof(int32_t));
      }
    }
  }
  return cache_dir / ("reference-logps-" + h.hex() + ".safetensors");
}

bool precompute_reference_logps(TaskModel& model, data::PreferencePairs& pairs, const ReferencePassOptions& options,
                                const torch::Device& device, parallel::Communicator& data_parallel, bool is_main) {
  const std::vector<data::EncodedPair*> every = all_pairs(pairs);
  const auto n = static_cast<int64_t>(every.size());
  torch::Tensor values = read_cache(options.cache_file, n);
  const bool cached = values.defined();
  if (!cached) {
    const auto start = std::chrono::steady_clock::now();
    // This rank's batches: every world-th of the pairs' batches, in order.
    const int64_t b = std::max<int64_t>(1, options.batch_pairs);
    const int64_t batches = (n + b - 1) / b;
    values = torch::zeros({n, 2}, torch::TensorOptions().dtype(torch::kFloat64).device(device));
    torch::NoGradGuard no_grad;
    const bool training = model.module().is_training();
    model.module().eval();
    std::vector<data::EncodedPair> chunk;
    for (int64_t k = data_parallel.rank(); k < batches; k += data_parallel.size()) {
      const int64_t first = k * b, count = std::min(b, n - first);
      chunk.clear();
      for (int64_t i = first; i < first + count; ++i) chunk.push_back(*every[static_cast<size_t>(i)]);
      std::vector<uint64_t> ids(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) ids[static_cast<size_t>(i)] = static_cast<uint64_t>(i);
      const data::HostBatch host = data::collate_pairs(chunk, ids, options.pad_id, options.pad_to_multiple);
      data::Batch batch;
      batch.input_ids = rows_tensor(host.input_ids, host.batch_size, host.seq_len, device);
      batch.labels = rows_tensor(host.labels, host.batch_size, host.seq_len, device);
      batch.attention_mask = rows_tensor(host.attention_mask, host.batch_size, host.seq_len, device);
      const preference::PairLogps lp = preference::PairLogps::split(
          preference::labelled_logps(model.logits(batch), batch.labels));
      values.narrow(0, first, count).copy_(torch::stack({lp.chosen.sum, lp.rejected.sum}, 1));
    }
    model.module().train(training);
    if (data_parallel.size() > 1) data_parallel.all_reduce(values)->wait();
    values = values.to(torch::kCPU, torch::kFloat32);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    util::log::info("preference: the reference's log-probs of " + std::to_string(n) +
                    " pairs computed by the starting model in " + std::to_string(seconds) + " s");
    if (is_main && !options.cache_file.empty()) {
      try {
        std::error_code ec;
        fs::create_directories(options.cache_file.parent_path(), ec);
        model::write_safetensors(options.cache_file, {{"reference_logps", values}},
                                 {{"format", "hftrain-reference-logps"}});
      } catch (const util::Error& e) {
        util::log::warn("preference: could not cache the reference log-probs in " + options.cache_file.string() +
                        " (" + e.what() + "); a resume computes them again");
      }
    }
  } else {
    util::log::info("preference: the reference's log-probs of " + std::to_string(n) + " pairs read from " +
                    options.cache_file.string());
  }
  const auto host = values.accessor<float, 2>();
  for (int64_t i = 0; i < n; ++i) every[static_cast<size_t>(i)]->reference_logps = {host[i][0], host[i][1]};
  return cached;
}

}  // namespace hftrain::train
