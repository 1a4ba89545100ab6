#include <unistd.h>

#include <fstream>
#include <stdexcept>

#include <catch2/catch.hpp>

#include "helpers.h"
#include "metrics/jsonl_writer.h"
#include "util/error.h"

using namespace hftrain;
using namespace hftrain::metrics;
using Catch::Matchers::Contains;

TEST_CASE("every record is a finished line as soon as append returns", "[metrics][jsonl]") {
  test::MetricsTempDir d;
  const auto path = d.path() / "metrics.jsonl";
  JsonlWriter w(path);
  w.append(R"({"step":1})");
  // Read while the writer is still open: nothing waits in a user-space buffer.
  CHECK(test::slurp(path) == "{\"step\":1}\n");
  w.append(R"({"step":2})");
  CHECK(test::slurp(path) == "{\"step\":1}\n{\"step\":2}\n");
}

TEST_CASE("reopening appends after the earlier records", "[metrics][jsonl]") {
  test::MetricsTempDir d;
  const auto path = d.path() / "metrics.jsonl";
  { JsonlWriter(path).append(R"({"step":1})"); }
  {
    JsonlWriter w(path, JsonlOptions{.sync = true});
    CHECK(w.repaired_bytes() == 0);
    w.append(R"({"step":2})");
  }
  CHECK(test::lines_of(test::slurp(path)) ==
        std::vector<std::string>{R"({"step":1})", R"({"step":2})"});
}

TEST_CASE("a line cut short by a crash is removed on reopening", "[metrics][jsonl]") {
  test::MetricsTempDir d;
  const auto path = d.path() / "metrics.jsonl";
  std::ofstream(path) << "{\"step\":1}\n{\"step\":2}\n{\"ste";
  {
    JsonlWriter w(path);
    CHECK(w.repaired_bytes() == 5);
    w.append(R"({"step":3})");
  }
  CHECK(test::slurp(path) == "{\"step\":1}\n{\"step\":2}\n{\"step\":3}\n");

  SECTION("a file holding only a torn line is emptied") {
    std::ofstream(path) << "{\"st";
    CHECK(truncate_torn_last_line(path) == 4);
    CHECK(test::slurp(path).empty());
  }
  SECTION("a torn line longer than the scan block is found") {
    const std::string head = "{\"step\":1}\n";
    std::ofstream(path) << head << std::string(200000, 'x');
    CHECK(truncate_torn_last_line(path) == 200000);
    CHECK(test::slurp(path) == head);
  }
  SECTION("a missing file is left alone") {
    CHECK(truncate_torn_last_line(d.path() / "none.jsonl") == 0);
    CHECK_FALSE(std::filesystem::exists(d.path() / "none.jsonl"));
  }
}

TEST_CASE("a record must be one line", "[metrics][jsonl]") {
  test::MetricsTempDir d;
  JsonlWriter w(d.path() / "m.jsonl");
  CHECK_THROWS_AS(w.append("{\n}"), std::invalid_argument);
}

TEST_CASE("an unwritable location is an IoError naming the path", "[metrics][jsonl]") {
  test::MetricsTempDir d;
  CHECK_THROWS_MATCHES(JsonlWriter(d.path() / "missing-dir" / "metrics.jsonl"), util::IoError,
                       Catch::Matchers::Predicate<util::IoError>([](const util::IoError& e) {
                         return std::string(e.what()).find("missing-dir/metrics.jsonl") !=
                                    std::string::npos &&
                                !e.hint().empty();
                       }));
  std::ofstream(d.path() / "plain") << "x";
  CHECK_THROWS_AS(JsonlWriter(d.path() / "plain" / "metrics.jsonl"), util::IoError);
  if (::geteuid() != 0) {  // root ignores permission bits
    std::filesystem::create_directory(d.path() / "ro");
    std::filesystem::permissions(
        d.path() / "ro", std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
    CHECK_THROWS_WITH(JsonlWriter(d.path() / "ro" / "metrics.jsonl"), Contains("cannot open"));
  }
}

TEST_CASE("a full disk is an IoError from append", "[metrics][jsonl]") {
  if (!std::filesystem::exists("/dev/full")) return;
  AppendFile f("/dev/full", AppendFile::Mode::kAppend);
  CHECK_THROWS_WITH(f.append("x\n"), Contains("cannot write /dev/full") && Contains("space"));
}
