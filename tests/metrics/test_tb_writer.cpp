#include <unistd.h>

#include <catch2/catch.hpp>

#include "helpers.h"
#include "metrics/crc32c.h"
#include "metrics/tb_writer.h"
#include "util/error.h"

using namespace hftrain;
using namespace hftrain::metrics;

namespace {
// Splits a TFRecord file into its records, checking both CRCs of each.
std::vector<std::string> read_records(const std::string& file) {
  std::vector<std::string> records;
  size_t at = 0;
  auto u32 = [&](size_t p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(file[p + i]);
    return v;
  };
  while (at < file.size()) {
    REQUIRE(at + 12 <= file.size());
    uint64_t len = 0;
    for (int i = 7; i >= 0; --i) len = (len << 8) | static_cast<unsigned char>(file[at + i]);
    CHECK(unmask_crc32c(u32(at + 8)) == crc32c(file.substr(at, 8)));
    REQUIRE(at + 12 + len + 4 <= file.size());
    records.push_back(file.substr(at + 12, len));
    CHECK(unmask_crc32c(u32(at + 12 + len)) == crc32c(records.back()));
    at += 12 + len + 4;
  }
  return records;
}
}  // namespace

TEST_CASE("the event file name is what TensorBoard looks for", "[metrics][tensorboard]") {
  CHECK(event_file_name(1700000000, "node-7") == "events.out.tfevents.1700000000.node-7");
  CHECK(event_file_name(1, "a/b") == "events.out.tfevents.1.a_b");
}

TEST_CASE("an event file starts with the version and holds one record per call",
          "[metrics][tensorboard]") {
  test::MetricsTempDir d;
  TbWriter w(d.path(), 1700000000.75, {.hostname = "testhost"});
  CHECK(w.path() == d.path() / "events.out.tfevents.1700000000.testhost");
  w.add_scalars(10, 1700000001.0, {{"train/loss", 2.5f}, {"train/lr", 1e-3f}});
  w.add_scalar(20, 1700000002.0, "train/loss", 2.25f);
  w.add_scalars(30, 1700000003.0, {});  // nothing to say: no record
  // Everything is in the file while the writer is still open.
  const auto records = read_records(test::slurp(w.path()));
  REQUIRE(records.size() == 3);
  CHECK(records[0] == encode_file_version_event(1700000000.75));
  CHECK(records[1] ==
        encode_scalars_event(1700000001.0, 10, {{"train/loss", 2.5f}, {"train/lr", 1e-3f}}));
  CHECK(records[2] == encode_scalars_event(1700000002.0, 20, {{"train/loss", 2.25f}}));
}

TEST_CASE("a second writer in the same second gets its own file", "[metrics][tensorboard]") {
  test::MetricsTempDir d;
  TbWriter first(d.path(), 5.0, {.hostname = "h"});
  TbWriter second(d.path(), 5.5, {.hostname = "h"});
  CHECK(first.path().filename() == "events.out.tfevents.5.h");
  CHECK(second.path().filename() == "events.out.tfevents.5.h.1");
  CHECK(read_records(test::slurp(first.path())).size() == 1);
}

TEST_CASE("an event file in a missing folder is an IoError", "[metrics][tensorboard]") {
  test::MetricsTempDir d;
  CHECK_THROWS_AS(TbWriter(d.path() / "nope", 1.0, {.hostname = "h"}), util::IoError);
}
