#include <catch2/catch.hpp>

#include "util/error.h"
#include "util/strings.h"

using namespace hftrain::util;

TEST_CASE("split, join, trim", "[util]") {
  CHECK(split("a.b..c", '.') == std::vector<std::string>{"a", "b", "", "c"});
  CHECK(split("", '.') == std::vector<std::string>{""});
  CHECK(join({"a", "b"}, ", ") == "a, b");
  CHECK(trim("  x y \n") == "x y");
  CHECK(trim("   ").empty());
}

TEST_CASE("edit distance and suggestions", "[util]") {
  CHECK(edit_distance("kitten", "sitting") == 3);
  CHECK(edit_distance("", "abc") == 3);
  CHECK(closest_matches("optimizer.lrr", {"optimizer.lr", "optimizer.name", "run.seed"}) ==
        std::vector<std::string>{"optimizer.lr"});
  CHECK(closest_matches("zzzzzz", {"optimizer.lr"}).empty());
}

TEST_CASE("UTF-8 text check", "[util]") {
  CHECK(check_utf8_text("plain ascii\nand é and 日本 and 🙂").empty());
  CHECK(check_utf8_text(std::string("a\nb\0c", 5)) == "NUL byte on line 2 (binary data?)");
  CHECK(check_utf8_text("ok\n\xff") == "invalid UTF-8 on line 2");
  CHECK(check_utf8_text("\xe6\x97") == "invalid UTF-8 on line 1");  // truncated sequence
}

TEST_CASE("clip: long text in messages is cut at a character, with its size", "[util]") {
  CHECK(clip("short") == "short");
  const std::string long_text(1000, 'x');
  CHECK(clip(long_text, 10) == "xxxxxxxxxx... (1000 bytes in all)");
  // "é" is two bytes: a cut inside it moves back to its start.
  CHECK(clip("abcdefghi\xC3\xA9z", 10) == "abcdefghi... (12 bytes in all)");
}

TEST_CASE("error messages stay short whatever they quote", "[util]") {
  const hftrain::util::ConfigError long_line("command line `data.train=" + std::string(100000, '[') + "` is bad",
                                             std::string(5000, 'h'));
  const std::string one = long_line.describe();
  CHECK(one.size() < 2000);
  CHECK(one.find("bytes in all") != std::string::npos);
  std::string many;
  for (int i = 0; i < 1000; ++i) many += "missing tensor layers." + std::to_string(i) + ".weight\n";
  const std::string listed = hftrain::util::CheckpointError(many).describe();
  CHECK(listed.size() < 4000);
  CHECK(listed.find("more lines") != std::string::npos);
}
