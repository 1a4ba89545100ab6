// Collects every problem found while resolving a config so that they are reported together.
#pragma once

#include <string>
#include <vector>

namespace hftrain::config {

struct Diagnostic {
  std::string where;    // "recipes/x.yaml:3:5", "command line `a=1`", ...
  std::string message;  // what is wrong, naming the key
  std::string hint;     // how to fix it; may be empty
};

class Diagnostics {
 public:
  void add(std::string where, std::string message, std::string hint = {});
  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  const std::vector<Diagnostic>& items() const { return items_; }
  // One block: a headline, then one line per problem (with its hint indented below).
  std::string format() const;
  // Throws ConfigError carrying format() when there is anything to report.
  void throw_if_any() const;

 private:
  std::vector<Diagnostic> items_;
};

}  // namespace hftrain::config
