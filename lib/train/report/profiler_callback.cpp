#include "train/report/profiler_callback.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/torch.h>

#include "util/error.h"
#include "util/strings.h"
#include "util/fs.h"
#include "util/log.h"

namespace hftrain::train {
namespace {

namespace kineto = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

constexpr const char* kDirVar = "HFTRAIN_PROFILE";
constexpr const char* kStepsVar = "HFTRAIN_PROFILE_STEPS";

bool parse_step(std::string_view text, int64_t& out) {
  const std::optional<int64_t> step = util::parse_int64(text);
  out = step.value_or(0);
  return out >= 1;
}

std::pair<int64_t, int64_t> parse_steps(const std::optional<std::string>& value) {
  if (!value || value->empty()) return {10, 12};
  const size_t colon = value->find(':');
  int64_t first = 0, last = 0;
  if (colon == std::string::npos || !parse_step(std::string_view(*value).substr(0, colon), first) ||
      !parse_step(std::string_view(*value).substr(colon + 1), last) || last < first) {
    throw util::ConfigError(std::string("environment variable ") + kStepsVar + "='" + value->substr(0, 40) +
                                "' is not a step range A:B with 1 <= A <= B",
                            "e.g. HFTRAIN_PROFILE_STEPS=10:12 (optimizer steps, both included), or unset it");
  }
  return {first, last};
}

class ProfilerCallback : public Callback {
 public:
  ProfilerCallback(std::filesystem::path dir, int64_t first, int64_t last, bool cuda, int rank)
      : dir_(std::move(dir)),
        first_(first),
        last_(last),
        cuda_(cuda),
        rank_(rank),
        // Input shapes and dtypes in the trace: bench/cast_census.py counts casts and mixed-dtype
        // elementwise operators (and the bytes they write) from them.
        config_(ProfilerState::KINETO, /*report_input_shapes=*/true) {
    activities_.insert(ActivityType::CPU);
    if (cuda_) activities_.insert(ActivityType::CUDA);
  }

  ~ProfilerCallback() override {
    if (!active_) return;
    try {
      kineto::disableProfiler();
    } catch (...) {  // a destructor during unwinding: the profile is lost, nothing else
    }
  }

  void on_train_begin(TrainState& state) override {
    if (state.step >= last_) {
      util::log::warn(std::string(kDirVar) + ": steps " + std::to_string(first_) + ":" + std::to_string(last_) +
                      " are before this run's first step " + std::to_string(state.step + 1) + "; nothing recorded");
      return;
    }
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) {
      throw util::IoError(std::string(kDirVar) + ": cannot create the folder " + dir_.string() + ": " + ec.message(),
                          "point HFTRAIN_PROFILE at a folder you can write");
    }
    kineto::prepareProfiler(config_, activities_);
    if (state.step >= first_ - 1) start(state.step);
  }

  void on_step_end(TrainState& state) override {
    if (!active_ && state.step == first_ - 1) start(state.step);
    if (active_ && state.step >= last_) stop(state.step);
  }

  void on_train_end(TrainState& state) override {
    if (active_) stop(state.step);
  }

 private:
  void start(int64_t done) {
    kineto::enableProfiler(config_, activities_);
    active_ = true;
    started_after_ = done;
  }

  void stop(int64_t done) {
    if (cuda_) torch::cuda::synchronize();
    std::unique_ptr<kineto::ProfilerResult> result = kineto::disableProfiler();
    active_ = false;
    const std::string suffix = "-rank" + std::to_string(rank_);
    const std::filesystem::path trace = dir_ / ("trace" + suffix + ".json");
    const std::filesystem::path table = dir_ / ("ops" + suffix + ".tsv");
    result->save(trace.string());
    write_table(*result, table);
    util::log::info(std::string(kDirVar) + ": steps " + std::to_string(started_after_ + 1) + "-" +
                    std::to_string(done) + " recorded: " + trace.string() + ", " + table.string());
  }

  static void write_table(const kineto::ProfilerResult& result, const std::filesystem::path& path) {
    struct Sum {
      int64_t calls = 0;
      uint64_t ns = 0;
    };
    std::map<std::pair<std::string, std::string>, Sum> sums;  // (device, name)
    for (const auto& e : result.events()) {
      Sum& s = sums[{c10::DeviceTypeName(e.deviceType(), /*lower_case=*/true), e.name()}];
      ++s.calls;
      s.ns += e.durationNs();
    }
    std::vector<std::tuple<uint64_t, std::string, std::string, int64_t>> rows;
    for (const auto& [key, s] : sums) rows.emplace_back(s.ns, key.first, key.second, s.calls);
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return std::get<0>(a) > std::get<0>(b); });
    std::ostringstream out;
    out << "device\tname\tcalls\ttotal_us\tmean_us\n";
    for (const auto& [ns, device, name, calls] : rows) {
      std::string clean = name;
      std::replace(clean.begin(), clean.end(), '\t', ' ');
      std::replace(clean.begin(), clean.end(), '\n', ' ');
      out << device << '\t' << clean << '\t' << calls << '\t' << static_cast<double>(ns) / 1e3 << '\t'
          << static_cast<double>(ns) / 1e3 / static_cast<double>(calls) << '\n';
    }
    util::atomic_write_file(path, out.str());
  }

  std::filesystem::path dir_;
  int64_t first_, last_;
  bool cuda_;
  int rank_;
  ProfilerConfig config_;
  std::set<ActivityType> activities_;
  bool active_ = false;
  int64_t started_after_ = 0;
};

}  // namespace

std::shared_ptr<Callback> make_profiler_callback(const util::Environment& env, bool cuda, int rank) {
  const std::optional<std::string> dir = env.get(kDirVar);
  if (!dir || dir->empty()) return nullptr;
  const auto [first, last] = parse_steps(env.get(kStepsVar));
  return std::make_shared<ProfilerCallback>(*dir, first, last, cuda, rank);
}

}  // namespace hftrain::train
