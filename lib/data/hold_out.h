// A validation split held out of record-based training data (classification, preference pairs).
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <numeric>
#include <random>
#include <vector>

namespace hftrain::data {

// Holds out `fraction` of `train` into `validation` by a fixed shuffle of the split seed (the same
// records every run with that seed), unless validation files are named (`validation_files`).
template <typename T>
void hold_out(std::vector<T>& train, std::vector<T>& validation,
              const std::vector<std::filesystem::path>& validation_files, double fraction, uint64_t seed) {
  if (!validation_files.empty() || fraction <= 0) return;
  std::vector<size_t> order(train.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
  const auto held = static_cast<size_t>(fraction * static_cast<double>(train.size()));
  std::vector<bool> is_held(train.size(), false);
  for (size_t i = 0; i < held; ++i) is_held[order[i]] = true;
  std::vector<T> kept;
  for (size_t i = 0; i < train.size(); ++i) (is_held[i] ? validation : kept).push_back(std::move(train[i]));
  train = std::move(kept);
}

}  // namespace hftrain::data
