#include <catch2/catch.hpp>

#include "../config/helpers.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"

using namespace hftrain;
using Catch::Matchers::Contains;

TEST_CASE("log levels parse, unknown ones are config errors", "[util][log]") {
  CHECK(util::log::parse_level("debug") == util::log::Level::kDebug);
  CHECK(util::log::parse_level("off") == util::log::Level::kOff);
  CHECK_THROWS_AS(util::log::parse_level("loud"), util::ConfigError);
}

TEST_CASE("log lines at or above the level reach the log file", "[util][log]") {
  test::TempDir d;
  const auto path = d.path() / "run.log";
  util::log::set_file(path.string());
  util::log::set_level(util::log::Level::kInfo);
  util::log::debug("hidden detail");
  util::log::info("step 10 loss 2.5");
  util::log::warn("disk nearly full");
  util::log::set_file("");  // closes and flushes the file sink
  const std::string text = util::read_file<util::IoError>(path, "log");
  CHECK_THAT(text, Contains("step 10 loss 2.5") && Contains("disk nearly full"));
  CHECK_THAT(text, !Contains("hidden detail"));
  // spdlog creates missing folders, but not under a plain file.
  CHECK_THROWS_AS(util::log::set_file((d.write("plain", "x") / "x.log").string()), util::IoError);
}
