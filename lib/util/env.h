// The process environment behind an interface, so that tests can inject their own variables.
#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hftrain::util {

class Environment {
 public:
  virtual ~Environment() = default;
  virtual std::optional<std::string> get(const std::string& name) const = 0;
  // Every variable, sorted by name.
  virtual std::vector<std::pair<std::string, std::string>> all() const = 0;

  // The real environment of this process.
  static const Environment& process();
};

class MapEnvironment : public Environment {
 public:
  MapEnvironment() = default;
  MapEnvironment(std::initializer_list<std::pair<const std::string, std::string>> vars) : vars_(vars) {}
  void set(const std::string& name, const std::string& value) { vars_[name] = value; }
  std::optional<std::string> get(const std::string& name) const override;
  std::vector<std::pair<std::string, std::string>> all() const override;

 private:
  std::map<std::string, std::string> vars_;
};

}  // namespace hftrain::util
