// What `hftrain sweep` runs: the points of a grid (`optimizer.lr=1e-4,3e-4 run.seed=1,2`: every
// combination, the first key outermost) or of a random search (`optimizer.lr=loguniform(1e-5,1e-2)
// --trials 8`: each trial draws every key), each point a list of overrides and a folder name
// ("lr=3e-4,seed=2").
//
// An override whose value has a comma outside brackets, braces, parentheses and quotes is a
// dimension; `uniform(lo,hi)`, `loguniform(lo,hi)` and `randint(lo,hi)` (both ends included) are
// distributions and need --trials. Any other override applies to every point. A value that is
// itself a list keeps its brackets: `logging.report_to=[jsonl, mlflow]` is one value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hftrain::launch {

struct SweepDimension {
  enum class Kind { kGrid, kUniform, kLogUniform, kRandInt };
  std::string key;
  Kind kind = Kind::kGrid;
  std::vector<std::string> values;  // kGrid
  double lo = 0, hi = 0;            // the distributions
};

struct SweepSpec {
  std::vector<std::string> fixed;          // overrides every point gets
  std::vector<SweepDimension> dimensions;  // in the order given
  int trials = 0;                          // > 0: random search
  uint64_t seed = 0;
};

// Throws UsageError naming the argument: a distribution without --trials, lo >= hi (or lo <= 0
// for loguniform), an empty choice, a key given twice, --trials with nothing to draw.
SweepSpec parse_sweep(const std::vector<std::string>& overrides, int trials, uint64_t seed);

struct SweepPoint {
  std::string name;                    // "lr=3e-4,seed=2": a folder name, unique in the sweep
  std::vector<std::string> overrides;  // this point's key=value, in dimension order
};

// The grid's points in order (the last dimension varies fastest), or `trials` random draws from
// the seed. Names use each key's last part unless two keys share it; '/' in a value becomes '_'.
std::vector<SweepPoint> plan_points(const SweepSpec& spec);

// Splits at the commas outside (), [], {} and quotes.
std::vector<std::string> split_top_level(const std::string& text);

}  // namespace hftrain::launch
