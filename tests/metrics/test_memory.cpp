#include <cstring>
#include <memory>

#include <catch2/catch.hpp>

#include "metrics/memory.h"

using namespace hftrain::metrics;

TEST_CASE("the status parser reads kB values by key", "[metrics][memory]") {
  const std::string status =
      "Name:\thftrain\nVmPeak:\t  200000 kB\nVmHWM:\t   51200 kB\nVmRSS:\t   40960 kB\n";
  CHECK(parse_proc_status_kb(status, "VmHWM") == 51200.0);
  CHECK(parse_proc_status_kb(status, "VmRSS") == 40960.0);
  CHECK_FALSE(parse_proc_status_kb(status, "VmSwap"));
  CHECK_FALSE(parse_proc_status_kb(status, "Vm"));              // a prefix of a key is not the key
  CHECK_FALSE(parse_proc_status_kb("Name:\thftrain", "Name"));  // not a number
}

TEST_CASE("the host peak RSS grows when memory is touched", "[metrics][memory]") {
  const auto before = host_peak_rss_mib();
  REQUIRE(before);
  CHECK(*before > 1.0);
  const auto current = host_current_rss_mib();
  REQUIRE(current);
  CHECK(*current <= *before + 1.0);

  constexpr size_t kBytes = 256u << 20;
  auto block = std::make_unique<char[]>(kBytes);
  std::memset(block.get(), 1, kBytes);  // touch every page so it becomes resident
  const auto after = host_peak_rss_mib();
  REQUIRE(after);
  CHECK(*after >= *before);
  CHECK(*after >= 256.0);
  CHECK(block[kBytes - 1] == 1);
}
