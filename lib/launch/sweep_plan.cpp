#include "launch/sweep_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>

#include "util/error.h"
#include "util/strings.h"

namespace hftrain::launch {
namespace {

const char* kExample = "hftrain sweep quickstart optimizer.lr=1e-4,3e-4 run.seed=1,2";

// "loguniform(1e-5, 1e-2)" -> the kind and its two ends.
bool parse_distribution(const std::string& key, const std::string& value, SweepDimension& d) {
  struct Named {
    const char* name;
    SweepDimension::Kind kind;
  };
  for (const Named n :
       {Named{"uniform(", SweepDimension::Kind::kUniform}, Named{"loguniform(", SweepDimension::Kind::kLogUniform},
        Named{"randint(", SweepDimension::Kind::kRandInt}}) {
    const std::string prefix = n.name;
    if (value.rfind(prefix, 0) != 0) continue;
    const std::string arg = key + "=" + value;
    if (value.back() != ')')
      throw util::UsageError("`" + arg + "`: no closing parenthesis", "optimizer.lr=loguniform(1e-5,1e-2)");
    const auto ends = util::split(value.substr(prefix.size(), value.size() - prefix.size() - 1), ',');
    char* end = nullptr;
    if (ends.size() != 2)
      throw util::UsageError("`" + arg + "` needs two numbers, low and high", "optimizer.lr=loguniform(1e-5,1e-2)");
    const std::string lo_text = util::trim(ends[0]), hi_text = util::trim(ends[1]);
    d.lo = std::strtod(lo_text.c_str(), &end);
    const bool lo_ok = end && *end == '\0' && !lo_text.empty();
    d.hi = std::strtod(hi_text.c_str(), &end);
    const bool hi_ok = end && *end == '\0' && !hi_text.empty();
    if (!lo_ok || !hi_ok || !std::isfinite(d.lo) || !std::isfinite(d.hi)) {
      throw util::UsageError("`" + arg + "`: the ends are not numbers", "optimizer.lr=loguniform(1e-5,1e-2)");
    }
    if (d.lo >= d.hi)
      throw util::UsageError("`" + arg + "`: low is not below high", "give low first: uniform(0.0,0.1)");
    if (n.kind == SweepDimension::Kind::kLogUniform && d.lo <= 0) {
      throw util::UsageError("`" + arg + "`: a log-uniform range must be above 0",
                             "optimizer.lr=loguniform(1e-5,1e-2)");
    }
    if (n.kind == SweepDimension::Kind::kRandInt && (d.lo != std::floor(d.lo) || d.hi != std::floor(d.hi))) {
      throw util::UsageError("`" + arg + "`: randint takes whole numbers", "trainer.grad_accum_steps=randint(1,8)");
    }
    d.key = key;
    d.kind = n.kind;
    return true;
  }
  return false;
}

std::string number_text(double v, bool integer) {
  char buf[32];
  if (integer) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(std::llround(v)));
  } else {
    std::snprintf(buf, sizeof buf, "%.4g", v);
  }
  return buf;
}

// Each dimension's label in folder names: the key's last part, the whole key where two share it.
std::vector<std::string> labels(const std::vector<SweepDimension>& dims) {
  std::vector<std::string> out;
  for (const auto& d : dims) out.push_back(d.key.substr(d.key.rfind('.') + 1));
  for (size_t i = 0; i < out.size(); ++i) {
    if (std::count(out.begin(), out.end(), out[i]) > 1) {
      for (size_t j = 0; j < out.size(); ++j) {
        if (j != i && out[j] == out[i]) out[j] = dims[j].key;
      }
      out[i] = dims[i].key;
    }
  }
  return out;
}

SweepPoint make_point(const std::vector<SweepDimension>& dims, const std::vector<std::string>& labels,
                      const std::vector<std::string>& values) {
  SweepPoint p;
  for (size_t i = 0; i < dims.size(); ++i) {
    p.overrides.push_back(dims[i].key + "=" + values[i]);
    std::string v = values[i];
    std::replace(v.begin(), v.end(), '/', '_');
    std::replace(v.begin(), v.end(), ' ', '_');
    p.name += (i ? "," : "") + labels[i] + "=" + v;
  }
  return p;
}

}  // namespace

std::vector<std::string> split_top_level(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  char quote = 0;
  for (const char c : text) {
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if ((c == ')' || c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
      continue;
    }
    cur += c;
  }
  out.push_back(cur);
  return out;
}

SweepSpec parse_sweep(const std::vector<std::string>& overrides, int trials, uint64_t seed) {
  SweepSpec spec;
  spec.trials = trials;
  spec.seed = seed;
  std::set<std::string> keys;
  bool distribution = false;
  for (const auto& o : overrides) {
    const size_t eq = o.find('=');
    if (eq == std::string::npos || eq == 0 || o[0] == '~') {
      spec.fixed.push_back(o);  // ~a.b and the like: every point
      continue;
    }
    const std::string key = o.substr(0, eq).front() == '+' ? o.substr(1, eq - 1) : o.substr(0, eq);
    const std::string value = o.substr(eq + 1);
    SweepDimension d;
    if (parse_distribution(key, value, d)) {
      distribution = true;
      d.key = o.substr(0, eq);  // with a leading + where the key adds a map entry
    } else {
      const auto parts = split_top_level(value);
      if (parts.size() < 2) {
        spec.fixed.push_back(o);
        continue;
      }
      d.key = o.substr(0, eq);
      for (const auto& part : parts) {
        if (util::trim(part).empty()) {
          throw util::UsageError("`" + o + "` has an empty choice",
                                 std::string("write the values apart by commas: ") + kExample);
        }
        d.values.push_back(util::trim(part));
      }
    }
    if (!keys.insert(key).second) {
      throw util::UsageError("`" + key + "` is swept twice", "give each key's values in one argument: key=a,b,c");
    }
    spec.dimensions.push_back(std::move(d));
  }
  if (distribution && trials <= 0) {
    throw util::UsageError("a random search needs --trials N (how many points to draw)",
                           "hftrain sweep RECIPE optimizer.lr=loguniform(1e-5,1e-2) --trials 8");
  }
  if (spec.dimensions.empty()) {
    throw util::UsageError("nothing to sweep: no override has several values or a distribution", kExample);
  }
  return spec;
}

std::vector<SweepPoint> plan_points(const SweepSpec& spec) {
  const auto& dims = spec.dimensions;
  const std::vector<std::string> label = labels(dims);
  std::vector<SweepPoint> points;
  if (spec.trials <= 0) {
    std::vector<size_t> index(dims.size(), 0);
    for (;;) {
      std::vector<std::string> values;
      for (size_t i = 0; i < dims.size(); ++i) values.push_back(dims[i].values[index[i]]);
      points.push_back(make_point(dims, label, values));
      size_t i = dims.size();
      while (i > 0 && ++index[i - 1] == dims[i - 1].values.size()) index[--i] = 0;
      if (i == 0) break;
    }
  } else {
    std::mt19937_64 rng(spec.seed);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (int t = 0; t < spec.trials; ++t) {
      std::vector<std::string> values;
      for (const auto& d : dims) {
        const double u = unit(rng);
        switch (d.kind) {
          case SweepDimension::Kind::kGrid:
            values.push_back(
                d.values[std::min(d.values.size() - 1, static_cast<size_t>(u * static_cast<double>(d.values.size())))]);
            break;
          case SweepDimension::Kind::kUniform: values.push_back(number_text(d.lo + u * (d.hi - d.lo), false)); break;
          case SweepDimension::Kind::kLogUniform:
            values.push_back(number_text(std::exp(std::log(d.lo) + u * (std::log(d.hi) - std::log(d.lo))), false));
            break;
          case SweepDimension::Kind::kRandInt:
            values.push_back(number_text(std::min(d.hi, std::floor(d.lo + u * (d.hi - d.lo + 1))), true));
            break;
        }
      }
      points.push_back(make_point(dims, label, values));
    }
  }
  // Unique folder names: a repeated draw gets -2, -3, ...
  std::set<std::string> seen;
  for (auto& p : points) {
    std::string name = p.name;
    for (int k = 2; !seen.insert(name).second; ++k) name = p.name + "-" + std::to_string(k);
    p.name = name;
  }
  return points;
}

}  // namespace hftrain::launch
