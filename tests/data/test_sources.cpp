// Sources: files, globs with excludes, separators, JSONL and chat records, and every kind of bad
// data file failing with a DataError that names the file and the line.
#include <catch2/catch.hpp>

#include "data/source.h"
#include "helpers.h"

using namespace hftrain;
using data::SourceFormat;
using data::SourceSpec;

namespace {
const std::string kFixtures = std::string(HFTRAIN_TEST_FIXTURES_DIR) + "/data";
}

TEST_CASE("a text file is one document unless a separator splits it", "[data][source]") {
  test::TempDir dir;
  auto file = dir.write("a.txt", "line one\nline two\n");
  auto docs = test::read_all(SourceSpec{.path = file.string()});
  REQUIRE(docs.size() == 1);
  CHECK(docs[0].segments.at(0).text == "line one\nline two\n");
  CHECK(docs[0].segments[0].train);
  CHECK(docs[0].origin == file.string() + ":1");
}

TEST_CASE("fortune files split at % lines, a glob excludes the binary index files", "[data][source]") {
  SourceSpec spec{.path = kFixtures + "/fortunes/*", .exclude = {"*.dat"}, .separator = "%"};
  auto files = data::expand_source(spec);
  REQUIRE(files.size() == 2);  // more, quotes (sorted), quotes.dat excluded
  CHECK(files[0].filename() == "more");
  auto docs = test::read_all(spec);
  REQUIRE(docs.size() == 4);
  CHECK(docs[0].segments[0].text == "Only one fortune here.\n");
  CHECK(docs[1].segments[0].text == "A fortune on one line.\n");
  CHECK(docs[2].segments[0].text == "Two lines,\n  the second indented.\n");
  CHECK(docs[2].origin == kFixtures + "/fortunes/quotes:3");
  CHECK(docs[3].segments[0].text == "Café au lait — déjà vu.\n");  // the empty %/% document is skipped
}

TEST_CASE("a binary file in a glob gives a DataError naming it, with a hint to exclude it", "[data][source]") {
  SourceSpec spec{.path = kFixtures + "/fortunes/*", .separator = "%"};
  auto msg = test::data_error([&] { test::read_all(spec); });
  CHECK_THAT(msg, Catch::Contains("quotes.dat:1:"));
  CHECK_THAT(msg, Catch::Contains("binary"));
}

TEST_CASE("the system fortune folder reads cleanly with its .dat and .u8 files excluded", "[data][source]") {
  const std::string folder = "/usr/share/games/fortunes";
  if (!std::filesystem::exists(folder)) {
    WARN("no " << folder << "; skipped");
    return;
  }
  SourceSpec spec{.path = folder + "/*", .exclude = {"*.dat", "*.u8"}, .separator = "%"};
  auto docs = test::read_all(spec);
  CHECK(docs.size() > 100);
  SourceSpec unfiltered{.path = folder + "/*", .separator = "%"};
  CHECK_THAT(test::data_error([&] { test::read_all(unfiltered); }), Catch::Contains(".dat:"));
}

TEST_CASE("folders are read recursively and symlinked duplicates count once", "[data][source]") {
  test::TempDir dir;
  dir.write("corpus/a.txt", "alpha");
  dir.write("corpus/sub/b.txt", "beta");
  std::filesystem::create_symlink(dir.path() / "corpus/a.txt", dir.path() / "corpus/a.u8");
  auto files = data::expand_source(SourceSpec{.path = (dir.path() / "corpus").string()});
  REQUIRE(files.size() == 2);
  CHECK(files[0].filename() == "a.txt");
  CHECK(files[1].filename() == "b.txt");
}

TEST_CASE("a file that vanishes or turns into a folder between listing and reading is a DataError naming it",
          "[data][source]") {
  test::TempDir dir;
  dir.write("corpus/a.txt", "alpha");
  dir.write("corpus/b.jsonl", "{\"text\": \"beta\"}\n");
  const SourceSpec spec{.path = (dir.path() / "corpus").string()};
  const auto files = data::expand_source(spec);
  REQUIRE(files.size() == 2);
  std::filesystem::remove(files[0]);                   // deleted after the listing
  std::filesystem::remove(files[1]);
  std::filesystem::create_directory(files[1]);         // replaced by a folder
  const auto read = [&](const std::filesystem::path& f) {
    return test::data_error([&] { data::read_documents(spec, f, {}, [](data::Document&&) {}); });
  };
  CHECK_THAT(read(files[0]), Catch::Contains(files[0].string() + " does not exist"));
  CHECK_THAT(read(files[1]), Catch::Contains(files[1].string() + " is a directory"));
  CHECK_THAT(read(files[1]), !Catch::Contains("filesystem error"));
}

TEST_CASE("missing, empty, whitespace-only and invalid UTF-8 files are DataErrors with file and line",
          "[data][source]") {
  test::TempDir dir;
  CHECK_THAT(test::data_error([&] { test::read_all(SourceSpec{.path = (dir.path() / "nope.txt").string()}); }),
             Catch::Contains("nope.txt does not exist"));
  CHECK_THAT(test::data_error([&] { test::read_all(SourceSpec{.path = (dir.path() / "*.none").string()}); }),
             Catch::Contains("matches no file"));
  auto empty = dir.write("empty.txt", "");
  CHECK_THAT(test::data_error([&] { test::read_all(SourceSpec{.path = empty.string()}); }),
             Catch::Contains("empty.txt:1: is empty"));
  auto blank = dir.write("blank.txt", "  \n\n");
  CHECK_THAT(test::data_error([&] { test::read_all(SourceSpec{.path = blank.string()}); }),
             Catch::Contains("blank.txt:1:"));
  auto latin1 = dir.write("latin1.txt", "ok\nstill ok\ncaf\xe9\n");
  auto msg = test::data_error([&] { test::read_all(SourceSpec{.path = latin1.string()}); });
  CHECK_THAT(msg, Catch::Contains("latin1.txt:3: invalid UTF-8"));
  auto overlong = dir.write("overlong.txt", "a\xc0\xaf");
  CHECK_THAT(test::data_error([&] { test::read_all(SourceSpec{.path = overlong.string()}); }),
             Catch::Contains("overlong.txt:1: invalid UTF-8"));
  auto binary = dir.write("blob.txt", std::string("text\n\x7f" "ELF\x02\x01\x00\x00", 13));
  CHECK_THAT(test::data_error([&] { test::read_all(SourceSpec{.path = binary.string()}); }),
             Catch::Contains("blob.txt:2: binary data"));
  auto only_seps = dir.write("seps.txt", "%\n%\n");
  CHECK_THAT(test::data_error([&] { test::read_all(SourceSpec{.path = only_seps.string(), .separator = "%"}); }),
             Catch::Contains("no document"));
  CHECK_THAT(test::data_error([&] { test::read_all(SourceSpec{.path = (dir.path() / "*").string(),
                                                              .exclude = {"*.txt"}}); }),
             Catch::Contains("after excluding *.txt"));
}

TEST_CASE("JSONL: the chosen field of each line, blank lines skipped", "[data][source]") {
  auto docs = test::read_all(SourceSpec{.path = kFixtures + "/docs.jsonl"});
  REQUIRE(docs.size() == 3);
  CHECK(docs[1].segments[0].text == "Second — with ünïcode and 日本語.");
  CHECK(docs[1].origin == kFixtures + "/docs.jsonl:3");
}

TEST_CASE("JSONL errors name the file and line", "[data][source]") {
  test::TempDir dir;
  auto missing = dir.write("m.jsonl", "{\"text\": \"a\"}\n{\"txt\": \"b\"}\n");
  auto msg = test::data_error([&] { test::read_all(SourceSpec{.path = missing.string()}); });
  CHECK_THAT(msg, Catch::Contains("m.jsonl:2: the record has no field 'text'"));
  auto malformed = dir.write("bad.jsonl", "{\"text\": \"a\"}\n\n{\"text\": \"b\"\n");
  CHECK_THAT(test::data_error([&] { test::read_all(SourceSpec{.path = malformed.string()}); }),
             Catch::Contains("bad.jsonl:3: malformed JSON"));
  auto wrong_type = dir.write("t.jsonl", "{\"text\": 5}\n");
  CHECK_THAT(test::data_error([&] { test::read_all(SourceSpec{.path = wrong_type.string()}); }),
             Catch::Contains("t.jsonl:1: field 'text' is a number"));
  // A number past double's range (found by the JSONL fuzz target: it escaped as the JSON
  // library's out_of_range and ended the process).
  auto huge = dir.write("huge.jsonl", "{\"text\": \"a\"}\n{\"text\": \"b\", \"score\": 1e999999}\n");
  CHECK_THAT(test::data_error([&] { test::read_all(SourceSpec{.path = huge.string()}); }),
             Catch::Contains("huge.jsonl:2: malformed JSON (number overflow parsing '1e999999')"));
  auto huge_chat = dir.write("huge-chat.jsonl", "{\"prompt\": \"p\", \"response\": \"r\", \"n\": -1e999999}\n");
  SourceSpec chat{.path = huge_chat.string(), .format = SourceFormat::kChat};
  CHECK_THAT(test::data_error([&] { test::read_all(chat); }),
             Catch::Contains("huge-chat.jsonl:1: malformed JSON (number overflow"));
  auto array = dir.write("arr.jsonl", "[1, 2]\n");
  CHECK_THAT(test::data_error([&] { test::read_all(SourceSpec{.path = array.string()}); }),
             Catch::Contains("arr.jsonl:1: the line is a JSON array"));
  auto nul = dir.write("nul.jsonl", "{\"text\": \"a\\u0000b\"}\n");
  CHECK_THAT(test::data_error([&] { test::read_all(SourceSpec{.path = nul.string()}); }),
             Catch::Contains("nul.jsonl:1:"));
  auto other_field = dir.write("c.jsonl", "{\"content\": \"x\"}\n");
  auto docs = test::read_all(SourceSpec{.path = other_field.string(), .text_field = "content"});
  CHECK(docs.at(0).segments[0].text == "x");
}

TEST_CASE("chat records: prompts are context, responses carry loss", "[data][source]") {
  SourceSpec spec{.path = kFixtures + "/chat.jsonl", .format = SourceFormat::kChat};
  auto docs = test::read_all(spec);
  REQUIRE(docs.size() == 2);
  REQUIRE(docs[0].segments.size() == 2);
  CHECK(docs[0].segments[0].text == "What is 2+2?");
  CHECK_FALSE(docs[0].segments[0].train);
  CHECK(docs[0].segments[1].text == "4");
  CHECK(docs[0].segments[1].train);
  REQUIRE(docs[1].segments.size() == 6);
  CHECK(docs[1].segments[0].text == "<|system|>\n");
  CHECK_FALSE(docs[1].segments[3].train);  // the user's message
  CHECK(docs[1].segments[4].text == "<|assistant|>\n");
  CHECK_FALSE(docs[1].segments[4].train);
  CHECK(docs[1].segments[5].text == "Paris.\n");
  CHECK(docs[1].segments[5].train);

  test::TempDir dir;
  auto no_response = dir.write("c.jsonl", "{\"prompt\": \"q\"}\n");
  CHECK_THAT(test::data_error(
                 [&] { test::read_all(SourceSpec{.path = no_response.string(), .format = SourceFormat::kChat}); }),
             Catch::Contains("c.jsonl:1: the record has no field 'response'"));
  auto no_assistant = dir.write("d.jsonl", "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}\n");
  CHECK_THAT(test::data_error(
                 [&] { test::read_all(SourceSpec{.path = no_assistant.string(), .format = SourceFormat::kChat}); }),
             Catch::Contains("d.jsonl:1: the conversation has no 'assistant' message"));
  auto bad_message = dir.write("e.jsonl", "{\"messages\": [{\"role\": \"assistant\"}]}\n");
  CHECK_THAT(test::data_error(
                 [&] { test::read_all(SourceSpec{.path = bad_message.string(), .format = SourceFormat::kChat}); }),
             Catch::Contains("e.jsonl:1: the record has no field 'content'"));
}
