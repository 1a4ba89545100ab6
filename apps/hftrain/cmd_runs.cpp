// `hftrain runs [DIR] [--json] [--no-verify]`: a table of the runs below a folder (status, step,
// best evaluation, newest checkpoint that verifies, start, duration). `hftrain runs diff A B`: the
// config keys whose values differ between two runs (or checkpoints), each value with its origin.
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <variant>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "config/resolve.h"
#include "config/schema.h"
#include "metrics/format.h"
#include "run_table.h"
#include "train/report/run_summary.h"
#include "util/env.h"
#include "util/error.h"

namespace hftrain::app {
namespace {

namespace fs = std::filesystem;

struct RunsArgs {
  std::string dir = "runs";
  bool json = false;
  bool no_verify = false;
  std::string a, b;
};

std::string time_text(std::optional<double> t) {
  if (!t) return "-";
  const std::time_t s = static_cast<std::time_t>(*t);
  std::tm tm{};
  localtime_r(&s, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm);
  return buf;
}

int list_runs(const RunsArgs& a) {
  const fs::path root(a.dir);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    throw util::UsageError("`" + a.dir + "` is not a folder",
                           "hftrain runs runs/   (the folder that holds run directories)");
  }
  const auto dirs = train::find_runs(root);
  if (a.json) {
    for (const auto& d : dirs) std::cout << summary_json(train::summarize_run(d, !a.no_verify), root).dump() << "\n";
    return 0;
  }
  Table table({"RUN", "STATUS", "STEP", "BEST EVAL", "CHECKPOINT", "STARTED", "DURATION", "NOTE"});
  for (const auto& d : dirs) {
    const train::RunSummary s = train::summarize_run(d, !a.no_verify);
    const std::string rel = d == root ? d.filename().string() : fs::relative(d, root, ec).string();
    table.add({rel, s.status, std::to_string(s.step) + "/" + (s.total_steps ? std::to_string(s.total_steps) : "?"),
               s.best_eval_loss ? metrics::format_number(*s.best_eval_loss, 5) : "-",
               s.newest_checkpoint ? s.newest_checkpoint->filename().string() : "-", time_text(s.started_at),
               s.duration_s ? duration_text(*s.duration_s) : "-", s.cause.substr(0, 80)});
  }
  if (dirs.empty()) {
    std::cout << "no runs below " << root.string() << " (a run directory holds config.yaml)\n";
    return 0;
  }
  std::cout << table.text();
  return 0;
}

// Each key's origin as config.yaml's comments give it ("  lr: 0.001  # command line `...`"),
// by dotted path: the emitter indents two spaces a level and writes one key a line.
std::map<std::string, std::string> origins_of(const fs::path& config_yaml) {
  std::map<std::string, std::string> out;
  std::ifstream in(config_yaml);
  std::vector<std::string> stack;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t indent = line.find_first_not_of(' ');
    const size_t colon = line.find(':', indent);
    if (indent == std::string::npos || colon == std::string::npos || line[indent] == '-') continue;
    const size_t depth = indent / 2;
    stack.resize(std::min(stack.size(), depth));
    const std::string key = line.substr(indent, colon - indent);
    const std::string rest = line.substr(colon + 1);
    const size_t comment = rest.rfind("  # ");
    const std::string value = rest.substr(0, comment == std::string::npos ? rest.size() : comment);
    if (value.find_first_not_of(' ') == std::string::npos && comment == std::string::npos) {
      stack.push_back(key);  // a section
      continue;
    }
    std::string path;
    for (const auto& s : stack) path += s + ".";
    out[path + key] = comment == std::string::npos ? "?" : rest.substr(comment + 4);
  }
  return out;
}

fs::path config_of(const std::string& arg) {
  const fs::path p = fs::path(arg) / "config.yaml";
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) {
    throw util::UsageError("`" + arg + "` holds no config.yaml",
                           "name a run directory (runs/NAME) or a checkpoint of one");
  }
  return p;
}

int diff_runs(const RunsArgs& a) {
  const fs::path ca = config_of(a.a), cb = config_of(a.b);
  const util::MapEnvironment no_env;  // the runs' own values, not this shell's
  auto resolve = [&](const fs::path& p) {
    config::ResolveOptions o;
    o.checkpoint_config = p;
    o.env = &no_env;
    return config::resolve_config(o);
  };
  const config::ResolvedConfig ra = resolve(ca), rb = resolve(cb);
  const auto oa = origins_of(ca), ob = origins_of(cb);
  auto text = [](const config::Value& v, const config::KeySpec& spec) {
    return std::holds_alternative<std::monostate>(v) ? std::string("unset") : config::value_to_text(v, spec);
  };
  auto origin = [](const std::map<std::string, std::string>& m, const std::string& key) {
    const auto it = m.find(key);
    return it == m.end() ? std::string("?") : it->second;
  };
  size_t differ = 0;
  const auto& keys = config::product_schema().keys();
  Table table({"KEY", a.a, "FROM", a.b, "FROM"});
  for (const auto& spec : keys) {
    const config::Value va = spec.read(ra.values, spec), vb = spec.read(rb.values, spec);
    if (va == vb) continue;
    ++differ;
    table.add({spec.path, text(va, spec), origin(oa, spec.path), text(vb, spec), origin(ob, spec.path)});
  }
  if (differ == 0) {
    std::cout << "the two runs' configs agree on all " << keys.size() << " keys\n";
    return 0;
  }
  std::cout << table.text() << differ << " of " << keys.size() << " keys differ\n";
  return 0;
}

}  // namespace

void add_runs_command(CLI::App& app, Runner& runner) {
  auto a = std::make_shared<RunsArgs>();
  CLI::App* sub =
      app.add_subcommand("runs", "A table of the runs below a folder; `runs diff A B` compares two configs");
  sub->add_option("dir", a->dir, "The folder holding run directories (default: runs)");
  sub->add_flag("--json", a->json, "One JSON object per run instead of the table");
  sub->add_flag("--no-verify", a->no_verify, "Show the newest checkpoint without reading its checksums");
  CLI::App* diff =
      sub->add_subcommand("diff", "The config keys whose values differ between two runs, with their origins");
  diff->add_option("a", a->a, "A run directory or checkpoint")->required();
  diff->add_option("b", a->b, "Another one")->required();
  sub->callback([a, sub, diff, &runner] {
    if (diff->parsed()) {
      runner = [a] { return diff_runs(*a); };
    } else {
      runner = [a] { return list_runs(*a); };
    }
    static_cast<void>(sub);
  });
}

}  // namespace hftrain::app
