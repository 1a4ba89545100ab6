#include <catch2/catch.hpp>

#include "config/units.h"

using namespace hftrain::config;

TEST_CASE("sizes parse with decimal and binary units", "[config][units]") {
  CHECK(std::get<int64_t>(parse_size("25MiB")) == 25 * 1024 * 1024);
  CHECK(std::get<int64_t>(parse_size("1GB")) == 1000000000);
  CHECK(std::get<int64_t>(parse_size("4096")) == 4096);
  CHECK(std::get<int64_t>(parse_size("1.5KiB")) == 1536);
  CHECK(std::get<int64_t>(parse_size("2 mib")) == 2 * 1024 * 1024);
  CHECK(std::holds_alternative<std::string>(parse_size("25MQ")));
  CHECK(std::holds_alternative<std::string>(parse_size("MiB")));
  CHECK(std::holds_alternative<std::string>(parse_size("0.3B")));       // not whole bytes
  CHECK(std::holds_alternative<std::string>(parse_size("99999999TiB")));  // overflows int64
  CHECK(std::get<std::string>(parse_size("25MQ")).find("unknown size unit") != std::string::npos);
}

TEST_CASE("counts parse with K/M/B/T suffixes", "[config][units]") {
  CHECK(std::get<int64_t>(parse_count("10M")) == 10000000);
  CHECK(std::get<int64_t>(parse_count("2B")) == 2000000000);
  CHECK(std::get<int64_t>(parse_count("1.5K")) == 1500);
  CHECK(std::get<int64_t>(parse_count("7")) == 7);
  CHECK(std::holds_alternative<std::string>(parse_count("10X")));
  CHECK(std::holds_alternative<std::string>(parse_count("1.5")));
}

TEST_CASE("durations parse and combine units largest first", "[config][units]") {
  CHECK(std::get<double>(parse_duration("30s")) == 30.0);
  CHECK(std::get<double>(parse_duration("10m")) == 600.0);
  CHECK(std::get<double>(parse_duration("1h30m")) == 5400.0);
  CHECK(std::get<double>(parse_duration("500ms")) == Approx(0.5));
  CHECK(std::get<double>(parse_duration("45")) == 45.0);
  CHECK(std::holds_alternative<std::string>(parse_duration("30m1h")));  // wrong order
  CHECK(std::holds_alternative<std::string>(parse_duration("10 parsecs")));
  CHECK(std::holds_alternative<std::string>(parse_duration("")));
}

TEST_CASE("formatted quantities re-parse to the same value", "[config][units]") {
  CHECK(format_size(26214400) == "25MiB");
  CHECK(format_size(1000) == "1000");
  CHECK(format_count(2000000000) == "2B");
  CHECK(format_count(1234) == "1234");
  CHECK(format_duration(600) == "10m");
  CHECK(format_duration(90) == "90s");
  for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{1536}, int64_t{1} << 40, int64_t{123456789}}) {
    CHECK(std::get<int64_t>(parse_size(format_size(v))) == v);
    CHECK(std::get<int64_t>(parse_count(format_count(v))) == v);
  }
  for (double s : {0.0, 0.25, 59.0, 3600.0, 86400.0 * 3, 5400.0}) {
    CHECK(std::get<double>(parse_duration(format_duration(s))) == Approx(s));
  }
}
