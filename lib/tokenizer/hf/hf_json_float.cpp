#include "tokenizer/hf/hf_json_float.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace hftrain::tokenizer::hf {
namespace {

// serde_json's POW10 table: the doubles nearest to 1e0 ... 1e308.
const std::array<double, 309>& powers_of_ten() {
  static const std::array<double, 309> table = [] {
    std::array<double, 309> t{};
    for (size_t k = 0; k < t.size(); ++k)
      t[k] = std::strtod(("1e" + std::to_string(k)).c_str(), nullptr);
    return t;
  }();
  return table;
}

}  // namespace

double tokenizers_double(double value) {
  if (value == 0 || !std::isfinite(value)) return value;
  // The shortest digits that round-trip, as "d.ddde-05".
  char buf[64];
  const auto result =
      std::to_chars(buf, buf + sizeof buf, std::fabs(value), std::chars_format::scientific);
  const std::string text(buf, result.ptr);
  const size_t e = text.find('e');
  uint64_t significand = 0;
  int digits = 0;
  for (size_t i = 0; i < e; ++i) {
    if (text[i] == '.') continue;
    significand = significand * 10 + static_cast<uint64_t>(text[i] - '0');
    ++digits;
  }
  int exponent = std::atoi(text.c_str() + e + 1) - (digits - 1);
  const auto& pow10 = powers_of_ten();
  auto f = static_cast<double>(significand);
  while (true) {
    const auto k = static_cast<size_t>(std::abs(exponent));
    if (k < pow10.size()) {
      f = exponent >= 0 ? f * pow10[k] : f / pow10[k];
      break;
    }
    if (exponent >= 0 || f == 0) break;  // a finite value never gets here with exponent >= 0
    f /= 1e308;
    exponent += 308;
  }
  return value < 0 ? -f : f;
}

}  // namespace hftrain::tokenizer::hf
