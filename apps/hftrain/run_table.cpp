#include "run_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace hftrain::app {

std::string Table::text() const {
  std::vector<size_t> width;
  for (const auto& row : rows_) {
    width.resize(std::max(width.size(), row.size()));
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows_) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string duration_text(double seconds) {
  const auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%lld s", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
  }
  return buf;
}

nlohmann::json summary_json(const train::RunSummary& s, const std::filesystem::path& root) {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  std::error_code ec;
  return {{"run", s.dir == root ? s.dir.filename().string() : std::filesystem::relative(s.dir, root, ec).string()},
          {"dir", s.dir.string()},
          {"name", s.name},
          {"status", s.status},
          {"cause", s.cause},
          {"step", s.step},
          {"total_steps", s.total_steps},
          {"best_eval_loss", opt(s.best_eval_loss)},
          {"final_eval_loss", opt(s.final_eval_loss)},
          {"last_loss", opt(s.last_loss)},
          {"tokens_per_s", opt(s.tokens_per_s)},
          {"newest_checkpoint",
           s.newest_checkpoint ? nlohmann::json(s.newest_checkpoint->string()) : nlohmann::json(nullptr)},
          {"started_at", opt(s.started_at)},
          {"duration_s", opt(s.duration_s)}};
}

}  // namespace hftrain::app
