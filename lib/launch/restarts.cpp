#include "launch/restarts.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <system_error>

#include <nlohmann/json.hpp>

#include "util/fs.h"
#include "util/json_file.h"

namespace hftrain::launch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The first line of a message, without the "error: " that describe() puts before it.
std::string headline(const std::string& message) {
  std::string line = message.substr(0, message.find('\n'));
  constexpr std::string_view kPrefix = "error: ";
  if (line.rfind(kPrefix, 0) == 0) line.erase(0, kPrefix.size());
  return line;
}

std::string describe(const FailureRecord& r) { return "rank " + std::to_string(r.rank) + ": " + headline(r.message); }

}  // namespace

void write_failure_record(const fs::path& run_dir, const FailureRecord& r) {
  const json j = {{"rank", r.rank},       {"kind", r.kind},       {"exit_code", r.exit_code},
                  {"message", r.message}, {"attempt", r.attempt}, {"time", r.time}};
  try {
    std::error_code ec;
    fs::create_directories(run_dir / kFailuresDir, ec);
    util::atomic_write_file(run_dir / kFailuresDir / ("rank-" + std::to_string(r.rank) + ".json"), j.dump(2) + "\n");
  } catch (const std::exception&) {
    // Best effort (see the header): the error itself is on its way to the user.
  }
}

std::vector<FailureRecord> read_failure_records(const fs::path& run_dir) {
  std::vector<FailureRecord> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run_dir / kFailuresDir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("rank-", 0) != 0 || e.path().extension() != ".json") continue;
    const auto j = util::read_json_object(e.path());
    if (!j) continue;
    try {
      FailureRecord r;
      r.rank = j->at("rank").get<int>();
      r.kind = j->at("kind").get<std::string>();
      r.exit_code = j->at("exit_code").get<int>();
      r.message = j->at("message").get<std::string>();
      r.attempt = j->value("attempt", 0);
      r.time = j->value("time", 0.0);
      out.push_back(std::move(r));
    } catch (const json::exception&) {
      // a record of another version or a torn one: left out, as the header says
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const FailureRecord& a, const FailureRecord& b) {
    return a.time != b.time ? a.time < b.time : a.rank < b.rank;
  });
  return out;
}

void clear_failure_records(const fs::path& run_dir) {
  std::error_code ec;
  fs::remove_all(run_dir / kFailuresDir, ec);
}

bool kind_may_pass(const std::string& kind) {
  return kind != "usage" && kind != "config" && kind != "data" && kind != "checkpoint" && kind != "diverged";
}

double restart_delay(const RestartOptions& o, int restart) {
  const double d = o.backoff_seconds * std::pow(2.0, std::max(0, restart - 1));
  return std::min(d, o.max_backoff_seconds);
}

AttemptVerdict judge_attempt(const AttemptEnd& end) {
  AttemptVerdict v;
  if (end.exit_code == 0) {
    v.finished = true;
    return v;
  }
  v.cause = end.launcher_cause;
  if (!end.records.empty()) v.cause += (v.cause.empty() ? "" : "; ") + describe(end.records.front());
  if (v.cause.empty()) v.cause = "exited with status " + std::to_string(end.exit_code);

  if (end.stop_requested) {
    v.why_final = "the job was asked to stop (a signal)";
    return v;
  }
  // The first failure is the cause. A worker killed by a signal writes no record: then every
  // record is a peer's reaction to the loss and must not veto a restart.
  const bool stop_code = std::find(end.stop_exit_codes.begin(), end.stop_exit_codes.end(), end.exit_code) !=
                         end.stop_exit_codes.end();
  const bool killed = end.exit_code > 128 && !stop_code;
  if (!end.records.empty() && !killed) {
    const FailureRecord& r = end.records.front();
    if (r.kind == "diverged") {
      v.why_final = "training diverged (" + describe(r) +
                    "); a restart would meet the same step again: set trainer.on_nonfinite=rollback, or resume with a "
                    "lower learning rate";
      return v;
    }
    if (!kind_may_pass(r.kind)) {
      v.why_final = "bad input (" + describe(r) + "); a restart would fail the same way";
      return v;
    }
  }
  if (end.exit_code == 2) {
    v.why_final = "bad input (exit 2); a restart would fail the same way";
    return v;
  }
  if (stop_code) {
    v.why_final = "the workers stopped on a signal (exit " + std::to_string(end.exit_code) +
                  ") after saving a checkpoint; continue with `hftrain resume`";
    return v;
  }
  v.may_restart = true;
  return v;
}

}  // namespace hftrain::launch
