// What `hftrain runs` and `hftrain sweep` print: a column-aligned table, durations, and a run's
// summary as JSON.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/report/run_summary.h"

namespace hftrain::app {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : rows_{std::move(header)} {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  // Each column as wide as its widest cell, two spaces between; the last column unpadded.
  std::string text() const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

// 45 s, 12m05s, 3h02m.
std::string duration_text(double seconds);

// A run's summary as JSON; "run" is its path relative to `root`.
nlohmann::json summary_json(const train::RunSummary& s, const std::filesystem::path& root);

}  // namespace hftrain::app
