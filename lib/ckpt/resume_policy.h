// What resuming with a changed config means. Every key declares its resume class in the schema
// (config/keys_*.cpp); this compares the checkpoint's config with the one asked for now and
// applies the policy: safe changes go through, training changes go through with a note, data
// order changes need --force, impossible changes are refused, each with the key,
// both values and where the new value came from.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "config/node.h"
#include "config/schema.h"

namespace hftrain::ckpt {

struct ConfigChange {
  std::string key;
  std::string before;  // the checkpoint's value, as text
  std::string after;   // the new value, as text
  std::string origin;  // where the new value came from
  config::ResumeChange change = config::ResumeChange::kUnset;
};

// Every key whose value differs, in schema order.
std::vector<ConfigChange> diff_configs(const config::Config& saved, const config::Config& now,
                                       const config::Node& now_tree,
                                       const config::Schema& schema = config::product_schema());

struct ResumePlan {
  std::vector<std::string> notes;  // one line per accepted change, for the log
};

// Applies the policy to `changes`. Throws ConfigError listing every refused change at once
// (data-order changes only when !force). `checkpoint` names the checkpoint in messages.
ResumePlan check_resume_changes(const std::vector<ConfigChange>& changes, bool force,
                                const std::string& checkpoint);

}  // namespace hftrain::ckpt
