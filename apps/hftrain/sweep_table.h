// A sweep's files: sweep.json (what it runs, for --resume) and sweep.jsonl (one row per point,
// rewritten as points end), and the table `hftrain sweep` prints.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <sys/types.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "launch/sweep_plan.h"

namespace hftrain::app {

inline constexpr const char* kSweepFile = "sweep.json";
inline constexpr const char* kTableFile = "sweep.jsonl";

// What a sweep is, as sweep.json keeps it for --resume.
struct Sweep {
  std::filesystem::path dir;
  std::string recipe;              // the recipe file, located when the sweep began
  std::vector<std::string> fixed;  // every point's overrides
  std::vector<launch::SweepPoint> points;
  int nproc_per_node = 0;
  int parallel = 1;
};

struct PointState {
  std::string status = "pending";  // pending, running, finished, failed, interrupted
  int exit_code = -1;
  pid_t pid = -1;
  double started = 0, ended = 0;
  std::string cause;
};

void save_sweep(const Sweep& s);
// Throws UsageError when `dir` holds no sweep.json hftrain wrote.
Sweep load_sweep(const std::filesystem::path& dir);
// The rows sweep.jsonl recorded, by point name.
std::map<std::string, nlohmann::json> recorded_rows(const std::filesystem::path& dir);
// Rewrites sweep.jsonl from the points' states and their run directories; returns the rows.
std::vector<nlohmann::json> write_table(const Sweep& s, const std::vector<PointState>& states);
// A number of a row ("-" for null), `digits` significant.
std::string number_or_dash(const nlohmann::json& v, int digits = 5);
// The rows as a table, and the best point by eval loss.
void print_table(const std::vector<nlohmann::json>& rows);

}  // namespace hftrain::app
