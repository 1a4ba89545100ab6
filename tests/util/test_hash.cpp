#include <catch2/catch.hpp>

#include "../config/helpers.h"
#include "util/error.h"
#include "util/hash.h"

using namespace hftrain;
using Catch::Matchers::Contains;

TEST_CASE("XXH3 digests match the reference values", "[util][hash]") {
  // From xxHash's own sanity tests (XXH3-128 and XXH3-64 of no bytes, seed 0).
  CHECK(util::hash_hex("") == "99aa06d3014798d86001c324468d497f");
  CHECK(util::hash64("") == 0x2D06800538D394C2ull);
  CHECK(util::hash_hex("abc").size() == 32);
  CHECK(util::hash_hex("abc") != util::hash_hex("abd"));
}

TEST_CASE("Hasher streams: any split of the input gives the one-shot digest", "[util][hash]") {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += std::to_string(i * 7919) + ",";
  const std::string expected = util::hash_hex(text);
  for (size_t chunk : {size_t{1}, size_t{3}, size_t{64}, size_t{1000}, text.size()}) {
    util::Hasher h;
    for (size_t i = 0; i < text.size(); i += chunk)
      h.update(std::string_view(text).substr(i, chunk));
    CHECK(h.hex() == expected);
  }
  util::Hasher h;
  CHECK(h.hex() == util::hash_hex(""));
  h.update("ab");
  CHECK(h.hex() == util::hash_hex("ab"));  // hex() does not end the stream
  h.update("c");
  CHECK(h.hex() == util::hash_hex("abc"));
}

TEST_CASE("hash_file_hex reads files larger than its buffer and names a missing one",
          "[util][hash]") {
  test::TempDir d;
  std::string big((size_t{1} << 20) * 2 + 12345, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31 % 251);
  CHECK(util::hash_file_hex(d.write("big", big)) == util::hash_hex(big));
  CHECK(util::hash_file_hex(d.write("empty", "")) == util::hash_hex(""));
  CHECK_THROWS_AS(util::hash_file_hex(d.path() / "nope"), util::IoError);
  CHECK_THROWS_WITH(util::hash_file_hex(d.path() / "nope"), Contains("nope"));
}
