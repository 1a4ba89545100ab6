#include "ckpt/resume_policy.h"

#include "config/diagnostics.h"
#include "util/error.h"
#include "util/strings.h"

namespace hftrain::ckpt {

using config::ResumeChange;

std::vector<ConfigChange> diff_configs(const config::Config& saved, const config::Config& now,
                                       const config::Node& now_tree, const config::Schema& schema) {
  std::vector<ConfigChange> out;
  for (const auto& spec : schema.keys()) {
    const config::Value before = spec.read(saved, spec);
    const config::Value after = spec.read(now, spec);
    if (before == after) continue;
    ConfigChange c;
    c.key = spec.path;
    c.before = std::holds_alternative<std::monostate>(before) ? "unset" : config::value_to_text(before, spec);
    c.after = std::holds_alternative<std::monostate>(after) ? "unset" : config::value_to_text(after, spec);
    const config::Node* n = now_tree.find_path(spec.segments);
    c.origin = n ? n->origin().describe() : "default";
    c.change = spec.on_resume;
    out.push_back(std::move(c));
  }
  return out;
}

namespace {

std::string describe(const ConfigChange& c) {
  return "`" + c.key + "`: " + c.before + " -> " + c.after + " (from " + c.origin + ")";
}

}  // namespace

ResumePlan check_resume_changes(const std::vector<ConfigChange>& changes, bool force, const std::string& checkpoint) {
  ResumePlan plan;
  std::vector<std::string> refused;
  std::string hint;
  for (const auto& c : changes) {
    switch (c.change) {
      case ResumeChange::kSafe:
        plan.notes.push_back("resume: " + describe(c));
        break;
      case ResumeChange::kTraining:
        plan.notes.push_back("resume: " + describe(c) + " changes the training from the resumed step on");
        break;
      case ResumeChange::kDataOrder:
        if (force) {
          plan.notes.push_back(
              "resume (--force): " + describe(c) +
              " changes which samples come next; the run is no longer a continuation of the saved one");
        } else {
          refused.push_back(describe(c) +
                            " changes the data order, so the resumed run would not continue the saved one");
          hint = "drop the override, or pass --force to accept a different data order";
        }
        break;
      case ResumeChange::kImpossible:
      case ResumeChange::kUnset:
        refused.push_back(describe(c) + " cannot change on resume: the saved weights and optimizer state depend on it");
        if (hint.empty()) hint = "start a new run with model.from=" + checkpoint + " to reuse the weights";
        break;
    }
  }
  if (!refused.empty()) {
    std::string msg = "cannot resume from " + checkpoint + " with " +
                      (refused.size() == 1 ? std::string("this change") : std::to_string(refused.size()) + " changes") +
                      ":";
    for (const auto& r : refused) msg += "\n  " + r;
    throw util::ConfigError(msg, hint);
  }
  return plan;
}

}  // namespace hftrain::ckpt
