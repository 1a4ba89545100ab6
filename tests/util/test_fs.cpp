#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "../config/helpers.h"
#include "util/error.h"
#include "util/fs.h"

using namespace hftrain;
using Catch::Matchers::Contains;

TEST_CASE("atomic_write_file replaces a file whole and leaves no temporary", "[util][fs]") {
  test::TempDir d;
  auto p = d.path() / "f.txt";
  util::atomic_write_file(p, "one");
  util::atomic_write_file(p, "two");
  CHECK(util::read_file<util::IoError>(p, "file") == "two");
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(d.path())) ++files;
  CHECK(files == 1);
}

TEST_CASE("atomic_write_file into a read-only folder fails cleanly", "[util][fs]") {
  if (::geteuid() == 0) {
    // root ignores permission bits; use a path whose parent is a file instead.
    test::TempDir d;
    auto file = d.write("plain", "x");
    CHECK_THROWS_AS(util::atomic_write_file(file / "child.txt", "y"), util::IoError);
    return;
  }
  test::TempDir d;
  ::chmod(d.path().c_str(), 0500);
  CHECK_THROWS_WITH(util::atomic_write_file(d.path() / "f.txt", "x"), Contains("cannot create"));
  ::chmod(d.path().c_str(), 0700);
}

TEST_CASE("read_file names the problem", "[util][fs]") {
  test::TempDir d;
  CHECK_THROWS_WITH(util::read_file<util::DataError>(d.path() / "x", "data file"),
                    Contains("data file") && Contains("does not exist"));
  CHECK_THROWS_WITH(util::read_file<util::DataError>(d.path(), "data file"), Contains("is a directory"));
  auto big = d.write("big", std::string(100, 'x'));
  CHECK_THROWS_WITH(util::read_file<util::DataError>(big, "data file", 10), Contains("more than the 10 allowed"));
}
