#include <catch2/catch.hpp>

#include "config/yaml_load.h"
#include "helpers.h"
#include "util/error.h"

using namespace hftrain;
using config::parse_yaml;
using Catch::Matchers::Contains;

namespace {
std::string parse_error(const std::string& text) {
  try {
    parse_yaml(text, "r.yaml");
  } catch (const util::ConfigError& e) {
    return e.what();
  }
  FAIL("expected a ConfigError for: " << text);
  return {};
}
}  // namespace

TEST_CASE("nodes carry file:line:column origins", "[config][yaml]") {
  auto root = parse_yaml("run:\n  name: abc\n  seed: 3\n", "r.yaml");
  const auto* name = root.find_path({"run", "name"});
  REQUIRE(name);
  CHECK(name->text() == "abc");
  CHECK(name->origin().describe() == "r.yaml:2:9");
  CHECK(root.find_path({"run", "seed"})->origin().line == 3);
}

TEST_CASE("quoted scalars are marked as strings", "[config][yaml]") {
  auto root = parse_yaml("a: '3'\nb: 3\nc: !!str 4\n", "r.yaml");
  CHECK(root.find("a")->quoted());
  CHECK_FALSE(root.find("b")->quoted());
  CHECK(root.find("c")->quoted());
}

TEST_CASE("hostile YAML is rejected with a position", "[config][yaml]") {
  CHECK_THAT(parse_error("a: [1, 2\n"), Contains("r.yaml:") && Contains("YAML syntax error"));
  CHECK_THAT(parse_error("run:\n\tname: x\n"), Contains("r.yaml:2: tab character in indentation"));
  CHECK_THAT(parse_error("a: 1\nb: 2\na: 3\n"), Contains("r.yaml:3:1: duplicate key 'a' (first set at line 1)"));
  CHECK_THAT(parse_error(std::string("a: \x01\x00\xff", 6)), Contains("not a text file"));
  CHECK_THAT(parse_error("a: \xc3\x28\n"), Contains("invalid UTF-8 on line 1"));
  CHECK_THAT(parse_error("? [a, b]\n: 1\n"), Contains("a key must be a plain name"));
  CHECK_THAT(parse_error("a: 1\n---\nb: 2\n"), Contains("r.yaml:2: a second YAML document starts here"));
  CHECK(parse_yaml("---\na: 1\n", "r.yaml").is_map());  // a leading marker is one document
  // Found by the fuzzer: yaml-cpp 0.7's LoadAll never returns on this input.
  CHECK_THROWS_AS(parse_yaml(",ndemodel:\n  1el}\nl:\n  d_m0, 2]: mde.{lo#d_model}\n", "r.yaml"),
                  util::ConfigError);
}

TEST_CASE("deep nesting is bounded, block or flow", "[config][yaml]") {
  std::string flow(10000, '[');
  CHECK_THAT(parse_error("a: " + flow), Contains("r.yaml"));
  std::string block;
  for (int i = 0; i < 100; ++i) block += std::string(static_cast<size_t>(i) * 2, ' ') + "k:\n";
  CHECK_THAT(parse_error(block), Contains("nesting deeper than 64 levels"));
}

TEST_CASE("an empty document is a null node", "[config][yaml]") {
  CHECK(parse_yaml("", "r.yaml").is_null());
  CHECK(parse_yaml("# only a comment\n", "r.yaml").is_null());
}

TEST_CASE("recipe files: missing, directory and empty files get clean errors", "[config][yaml]") {
  test::TempDir dir;
  CHECK_THROWS_WITH(config::load_yaml_file(dir.path() / "nope.yaml"), Contains("does not exist"));
  CHECK_THROWS_WITH(config::load_yaml_file(dir.path()), Contains("is a directory"));
  CHECK(config::load_yaml_file(dir.write("empty.yaml", "")).is_null());
}
