#include "config/diagnostics.h"

#include "util/error.h"

namespace hftrain::config {

void Diagnostics::add(std::string where, std::string message, std::string hint) {
  items_.push_back({std::move(where), std::move(message), std::move(hint)});
}

std::string Diagnostics::format() const {
  std::string out;
  if (items_.size() == 1) {
    out = "invalid config: ";
  } else {
    out = "invalid config: " + std::to_string(items_.size()) + " problems:\n  ";
  }
  for (size_t i = 0; i < items_.size(); ++i) {
    const auto& d = items_[i];
    if (i) out += "\n  ";
    out += d.where.empty() ? d.message : d.where + ": " + d.message;
    if (!d.hint.empty()) out += (items_.size() == 1 ? "\nhint: " : "\n      hint: ") + d.hint;
  }
  return out;
}

void Diagnostics::throw_if_any() const {
  if (!items_.empty()) throw util::ConfigError(format());
}

}  // namespace hftrain::config
