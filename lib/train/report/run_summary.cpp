#include "train/report/run_summary.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ckpt/layout.h"
#include "ckpt/run_lock.h"
#include "ckpt/verify.h"
#include "launch/restarts.h"
#include "util/fs.h"
#include "util/host.h"
#include "util/json_file.h"
#include "util/log.h"

namespace hftrain::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// run.name from config.yaml (the emitter writes `  name: VALUE  # origin` under `run:`).
std::string run_name(const fs::path& run_dir) {
  std::ifstream in(run_dir / "config.yaml");
  std::string line;
  bool in_run = false;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != ' ' && line[0] != '#') in_run = line.rfind("run:", 0) == 0;
    if (in_run && line.rfind("  name: ", 0) == 0) {
      std::string v = line.substr(8);
      if (const size_t c = v.find("  #"); c != std::string::npos) v.erase(c);
      if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'')) v = v.substr(1, v.size() - 2);
      return v;
    }
  }
  return run_dir.filename().string();
}

// What metrics.jsonl holds: the last step record and every evaluation.
void read_metrics(const fs::path& run_dir, RunSummary& s) {
  std::ifstream in(run_dir / "metrics.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    const json r = json::parse(line, nullptr, false);
    if (!r.is_object() || !r.contains("step") || !r["step"].is_number_integer()) continue;
    if (r.contains("eval_loss") && r["eval_loss"].is_number()) {
      const double e = r["eval_loss"].get<double>();
      s.final_eval_loss = e;
      if (!s.best_eval_loss || e < *s.best_eval_loss) s.best_eval_loss = e;
    } else if (r.contains("loss")) {
      s.step = std::max(s.step, r["step"].get<int64_t>());
      if (r["loss"].is_number()) s.last_loss = r["loss"].get<double>();
      if (r.contains("tokens_per_s") && r["tokens_per_s"].is_number()) s.tokens_per_s = r["tokens_per_s"].get<double>();
    }
  }
}

}  // namespace

void write_run_status(const fs::path& run_dir, const RunStatusRecord& r) {
  const json j = {{"status", r.status},
                  {"started_at", r.started_at},
                  {"process_started_at", r.process_started_at},
                  {"ended_at", r.ended_at},
                  {"step", r.step},
                  {"total_steps", r.total_steps},
                  {"error", r.error},
                  {"host", r.host},
                  {"pid", r.pid}};
  try {
    util::atomic_write_file(run_dir / kRunStatusFile, j.dump(2) + "\n");
  } catch (const std::exception& e) {
    util::log::warn(std::string("cannot write the run's status record: ") + e.what());
  }
}

std::optional<RunStatusRecord> read_run_status(const fs::path& run_dir) {
  const auto j = util::read_json_object(run_dir / kRunStatusFile);
  if (!j) return std::nullopt;
  try {
    RunStatusRecord r;
    r.status = j->at("status").get<std::string>();
    r.started_at = j->value("started_at", 0.0);
    r.process_started_at = j->value("process_started_at", 0.0);
    r.ended_at = j->value("ended_at", 0.0);
    r.step = j->value("step", int64_t{0});
    r.total_steps = j->value("total_steps", int64_t{0});
    r.error = j->value("error", "");
    r.host = j->value("host", "");
    r.pid = j->value("pid", int64_t{0});
    return r;
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

RunStatusRecord starting_status(const fs::path& run_dir, bool resuming, int64_t step, int64_t total_steps) {
  RunStatusRecord r;
  r.process_started_at = now_seconds();
  r.started_at = r.process_started_at;
  if (resuming) {
    if (const auto earlier = read_run_status(run_dir); earlier && earlier->started_at > 0)
      r.started_at = earlier->started_at;
  }
  r.step = step;
  r.total_steps = total_steps;
  r.host = util::host_name();
  r.pid = static_cast<int64_t>(::getpid());
  return r;
}

bool run_dir_busy(const fs::path& run_dir) {
  const int fd = ::open((run_dir / ckpt::kRunLockFile).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // A shared probe, let go at once: it fails only while a run holds the exclusive lock.
  const bool busy = ::flock(fd, LOCK_SH | LOCK_NB) != 0;
  if (!busy) ::flock(fd, LOCK_UN);
  ::close(fd);
  return busy;
}

RunSummary summarize_run(const fs::path& run_dir, bool verify) {
  RunSummary s;
  s.dir = run_dir;
  s.name = run_name(run_dir);
  read_metrics(run_dir, s);
  std::error_code ec;
  if (verify) {
    if (const auto choice = ckpt::newest_verified(run_dir)) s.newest_checkpoint = choice->chosen.dir;
  } else if (const auto all = ckpt::list_checkpoints(run_dir); !all.empty()) {
    s.newest_checkpoint = all.back().dir;
  }
  const auto record = read_run_status(run_dir);
  const bool busy = run_dir_busy(run_dir);
  if (record) {
    s.status = record->status;
    s.step = std::max(s.step, record->step);
    s.total_steps = record->total_steps;
    s.cause = record->error;
    if (record->started_at > 0) s.started_at = record->started_at;
    if (record->ended_at > 0 && s.started_at) s.duration_s = record->ended_at - *s.started_at;
  } else {
    // A run from before status records: what its files say.
    s.status = fs::exists(run_dir / "final", ec) ? "finished" : s.newest_checkpoint ? "interrupted" : "failed";
    struct stat st{};
    if (::stat((run_dir / "config.yaml").c_str(), &st) == 0) s.started_at = static_cast<double>(st.st_mtime);
  }
  if (busy) {
    s.status = "running";
    if (s.started_at) s.duration_s = now_seconds() - *s.started_at;
  } else if (s.status == "running") {
    // Its process is gone without writing how it ended: killed (SIGKILL, the OOM killer, a lost node).
    s.status = "failed";
    s.cause = "the process ended without a word (killed?)";
    // A record of this process's time, not one an earlier process left.
    for (const auto& f : launch::read_failure_records(run_dir)) {
      if (!record || f.time + 1 >= record->process_started_at) {
        s.cause = f.message;
        break;
      }
    }
  }
  if (s.cause.rfind("error: ", 0) == 0) s.cause.erase(0, 7);
  if (const size_t nl = s.cause.find('\n'); nl != std::string::npos) s.cause.erase(nl);
  return s;
}

std::vector<fs::path> find_runs(const fs::path& root) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (fs::exists(root / "config.yaml", ec)) out.push_back(root);
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (!it->is_directory(ec)) continue;
    const std::string name = it->path().filename().string();
    if (ckpt::parse_checkpoint_step(name) || name == "final" || name == "final-hf" || name[0] == '.' ||
        name == launch::kFailuresDir || name == "optimizer") {
      it.disable_recursion_pending();
      continue;
    }
    if (fs::exists(it->path() / "config.yaml", ec)) out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace hftrain::train
