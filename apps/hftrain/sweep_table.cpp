#include "sweep_table.h"

#include <fstream>
#include <iostream>

#include "metrics/format.h"
#include "run_table.h"
#include "train/report/run_summary.h"
#include "util/error.h"
#include "util/fs.h"

namespace hftrain::app {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json point_record(const Sweep& s, const launch::SweepPoint& p, const PointState& st) {
  const fs::path dir = s.dir / p.name;
  json r = {{"point", p.name}, {"overrides", p.overrides}, {"status", st.status}, {"exit_code", st.exit_code},
            {"run_dir", dir.string()}, {"cause", st.cause}};
  r["duration_s"] = st.ended > 0 ? json(st.ended - st.started) : json(nullptr);
  std::error_code ec;
  if (fs::exists(dir / "config.yaml", ec)) {
    const train::RunSummary sum = train::summarize_run(dir, /*verify=*/false);
    auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
    r["step"] = sum.step;
    r["total_steps"] = sum.total_steps;
    r["final_eval_loss"] = opt(sum.final_eval_loss);
    r["best_eval_loss"] = opt(sum.best_eval_loss);
    r["tokens_per_s"] = opt(sum.tokens_per_s);
  } else {
    r["step"] = 0;
    r["total_steps"] = 0;
    r["final_eval_loss"] = r["best_eval_loss"] = r["tokens_per_s"] = nullptr;
  }
  return r;
}

}  // namespace

std::string number_or_dash(const json& v, int digits) {
  return v.is_number() ? metrics::format_number(v.get<double>(), digits) : "-";
}

void save_sweep(const Sweep& s) {
  json points = json::array();
  for (const auto& p : s.points) points.push_back({{"name", p.name}, {"overrides", p.overrides}});
  const json j = {{"recipe", s.recipe}, {"fixed", s.fixed}, {"points", points}, {"nproc_per_node", s.nproc_per_node},
                  {"parallel", s.parallel}};
  util::atomic_write_file(s.dir / kSweepFile, j.dump(2) + "\n");
}

Sweep load_sweep(const fs::path& dir) {
  const fs::path file = dir / kSweepFile;
  const std::string text = util::read_file<util::UsageError>(file, "sweep file");
  const json j = json::parse(text, nullptr, false);
  Sweep s;
  s.dir = dir;
  const util::UsageError not_ours(file.string() + " is not a sweep file hftrain wrote",
                                  "name the folder `hftrain sweep` made: runs/NAME/sweep-ID");
  if (!j.is_object()) throw not_ours;
  try {
    s.recipe = j.at("recipe").get<std::string>();
    s.fixed = j.at("fixed").get<std::vector<std::string>>();
    s.nproc_per_node = j.value("nproc_per_node", 0);
    s.parallel = j.value("parallel", 1);
    for (const auto& p : j.at("points"))
      s.points.push_back({p.at("name").get<std::string>(), p.at("overrides").get<std::vector<std::string>>()});
  } catch (const json::exception&) {
    throw not_ours;
  }
  return s;
}

// The rows sweep.jsonl recorded, by point name.
std::map<std::string, json> recorded_rows(const fs::path& dir) {
  std::map<std::string, json> out;
  std::ifstream in(dir / kTableFile);
  std::string line;
  while (std::getline(in, line)) {
    const json r = json::parse(line, nullptr, false);
    if (r.is_object() && r.contains("point") && r["point"].is_string() && r.contains("status"))
      out[r["point"].get<std::string>()] = r;
  }
  return out;
}

std::vector<json> write_table(const Sweep& s, const std::vector<PointState>& states) {
  std::vector<json> rows;
  std::string text;
  for (size_t i = 0; i < s.points.size(); ++i) {
    rows.push_back(point_record(s, s.points[i], states[i]));
    text += rows.back().dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  }
  util::atomic_write_file(s.dir / kTableFile, text);
  return rows;
}


void print_table(const std::vector<json>& rows) {
  Table t({"POINT", "STATUS", "STEPS", "FINAL EVAL", "BEST EVAL", "TOKENS/S", "NOTE"});
  const json* best = nullptr;
  for (const auto& r : rows) {
    t.add({r["point"].get<std::string>(), r["status"].get<std::string>(),
           std::to_string(r["step"].get<int64_t>()) + "/" + std::to_string(r["total_steps"].get<int64_t>()),
           number_or_dash(r["final_eval_loss"]), number_or_dash(r["best_eval_loss"]),
           number_or_dash(r["tokens_per_s"], 4), r["cause"].get<std::string>().substr(0, 80)});
    if (r["best_eval_loss"].is_number() &&
        (!best || r["best_eval_loss"].get<double>() < (*best)["best_eval_loss"].get<double>())) {
      best = &r;
    }
  }
  std::cout << t.text();
  if (best)
    std::cout << "best: " << (*best)["point"].get<std::string>() << " (eval loss "
              << number_or_dash((*best)["best_eval_loss"]) << ")\n";
}

}  // namespace hftrain::app
