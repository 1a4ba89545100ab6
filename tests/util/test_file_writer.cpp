#include <cerrno>

#include <catch2/catch.hpp>

#include "../config/helpers.h"
#include "util/error.h"
#include "util/file_writer.h"
#include "util/fs.h"
#include "util/hash.h"

using namespace hftrain;
using Catch::Matchers::Contains;

namespace {
// The IoError `f` throws; fails the test when it throws none.
template <class F>
util::IoError io_error_of(F&& f) {
  try {
    f();
  } catch (const util::IoError& e) {
    return e;
  }
  FAIL("expected an IoError");
  return util::IoError("");
}
}  // namespace

TEST_CASE("FileWriter writes the bytes and checksums them on the way", "[util][file_writer]") {
  test::TempDir d;
  const auto p = d.path() / "out.bin";
  std::string expected;
  {
    util::FileWriter out(p);
    CHECK(out.size() == 0);
    CHECK(out.checksum() == util::hash_hex(""));
    out.write("hello ");
    std::string binary(3000, '\0');
    for (size_t i = 0; i < binary.size(); ++i) binary[i] = static_cast<char>(i);
    out.write(binary.data(), binary.size());
    expected = "hello " + binary;
    CHECK(out.size() == expected.size());
    CHECK(out.checksum() == util::hash_hex(expected));
    out.close();
    out.close();  // a second close does nothing
  }
  CHECK(util::read_file<util::IoError>(p, "file") == expected);
  CHECK(util::hash_file_hex(p) == util::hash_hex(expected));
}

TEST_CASE("FileWriter truncates an existing file, the destructor closes an unclosed one",
          "[util][file_writer]") {
  test::TempDir d;
  const auto p = d.write("f", "a much longer old content");
  { util::FileWriter(p).write("new"); }
  CHECK(util::read_file<util::IoError>(p, "file") == "new");
}

TEST_CASE("FileWriter on a full device says the disk is full", "[util][file_writer]") {
  // /dev/full accepts open() and fails every write with ENOSPC: a real full disk.
  util::FileWriter out("/dev/full");
  const auto e = io_error_of([&] { out.write(std::string(100, 'x')); });
  CHECK_THAT(std::string(e.what()), Contains("/dev/full") && Contains("the disk is full"));
  CHECK_THAT(e.hint(), Contains("run.output_dir"));
}

TEST_CASE("FileWriter names the path it cannot create", "[util][file_writer]") {
  test::TempDir d;
  const auto missing = d.path() / "no-such-dir" / "f";
  CHECK_THAT(std::string(io_error_of([&] { util::FileWriter{missing}; }).what()),
             Contains("cannot create") && Contains(missing.string()) && Contains("No such file"));
  CHECK_THAT(std::string(io_error_of([&] { util::FileWriter{d.path()}; }).what()),
             Contains(d.path().string()) && Contains("Is a directory"));
  // /proc refuses new files even to root: a permission error without chmod.
  const auto e = io_error_of([] { util::FileWriter{"/proc/hftrain-test"}; });
  CHECK_THAT(std::string(e.what()), Contains("/proc/hftrain-test"));
}

TEST_CASE("io_error gives the hint that fits the cause", "[util][file_writer]") {
  CHECK_THAT(std::string(util::io_error("write", "/x", EDQUOT).what()),
             Contains("the disk is full"));
  CHECK_THAT(std::string(util::io_error("write", "/x", EROFS).what()), Contains("read-only"));
  CHECK_THAT(std::string(util::io_error("create", "/x", EACCES).what()),
             Contains("permission denied"));
  CHECK_THAT(util::io_error("create", "/x", EACCES).hint(), Contains("permissions"));
  CHECK_THAT(std::string(util::io_error("open", "/x", ENOENT).what()),
             Contains("cannot open /x: No such file"));
}

TEST_CASE("atomic_write_with removes the temporary file when filling fails", "[util][fs]") {
  test::TempDir d;
  const auto p = d.write("f", "old");
  CHECK_THROWS_AS(util::atomic_write_with(p,
                                          [](util::FileWriter& out) {
                                            out.write("partial");
                                            throw util::IoError("stop");
                                          }),
                  util::IoError);
  CHECK(util::read_file<util::IoError>(p, "file") == "old");
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(d.path())) ++files;
  CHECK(files == 1);
}

TEST_CASE("publish_dir swaps a folder in whole", "[util][fs]") {
  test::TempDir d;
  d.write("staged/new.txt", "new");
  util::publish_dir(d.path() / "staged", d.path() / "dir");  // no dir yet: a plain rename
  CHECK(util::read_file<util::IoError>(d.path() / "dir" / "new.txt", "file") == "new");
  d.write("staged2/newer.txt", "newer");
  util::publish_dir(d.path() / "staged2", d.path() / "dir");  // replaces it
  CHECK(std::filesystem::exists(d.path() / "dir" / "newer.txt"));
  CHECK_FALSE(std::filesystem::exists(d.path() / "dir" / "new.txt"));
  CHECK_FALSE(std::filesystem::exists(d.path() / "staged2"));
}
