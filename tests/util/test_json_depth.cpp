// The depth limit on JSON files (util/json_depth.h): real nesting passes, a million levels are
// refused by line before any parser sees them, brackets inside strings (escaped quotes included)
// do not count.
#include <catch2/catch.hpp>

#include <string>

#include "util/error.h"
#include "util/json_depth.h"

using namespace hftrain;
using Catch::Matchers::Contains;

TEST_CASE("json depth: ordinary files pass, deep ones are refused with their line", "[util][json]") {
  CHECK_FALSE(util::json_too_deep(R"({"model": {"vocab": {"a": 1}, "merges": [["a", "b"]]}})"));
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  CHECK(util::json_too_deep(deep) == size_t{1});
  const std::string late = "{\n\"a\":\n" + std::string(300, '{');
  CHECK(util::json_too_deep(late) == size_t{3});
  // Exactly the limit is fine, one more is not.
  CHECK_FALSE(util::json_too_deep(std::string(256, '[') + std::string(256, ']')));
  CHECK(util::json_too_deep(std::string(257, '[')));
  CHECK_THROWS_AS(util::check_json_depth<util::DataError>(deep, "tok/tokenizer.json"), util::DataError);
  CHECK_THROWS_WITH(util::check_json_depth<util::CheckpointError>(late, "ck/manifest.json"),
                    Contains("ck/manifest.json:3") && Contains("nested deeper than 256 levels"));
}

TEST_CASE("json depth: brackets in strings do not count", "[util][json]") {
  const std::string in_string = "[\"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"]";
  CHECK_FALSE(util::json_too_deep(in_string));
  CHECK_FALSE(util::json_too_deep(R"(["\\", "]]]]", {"k": "\"[["}])"));
  // Closing brackets never drive the depth below zero (malformed input is the parser's to report).
  CHECK_FALSE(util::json_too_deep(std::string(10, ']') + std::string(256, '[')));
}
