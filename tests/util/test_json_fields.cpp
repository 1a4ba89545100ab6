// util::JsonFields, the one typed reader of JSON fields: values, fallbacks, and messages that name the
// file, the path and the value, with the place's error type and hint.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/json_fields.h"

using namespace hftrain;
using Catch::Matchers::Equals;
using Json = nlohmann::json;

namespace {

const std::string kFile = "m/config.json";
const util::JsonPlace kTop{&kFile, "", util::ErrorKind::kCheckpoint, "use another one"};

// The message of the error `read` throws, after checking its kind and hint.
template <class Read>
std::string error_of(Read read) {
  try {
    read();
  } catch (const util::CheckpointError& e) {
    CHECK(e.hint() == "use another one");
    return e.what();
  }
  FAIL("no CheckpointError");
  return "";
}

}  // namespace

TEST_CASE("json fields: typed members, with fallbacks for absent and null ones", "[util][json]") {
  const Json j = Json::parse(R"({"n": 3, "x": 0.5, "name": "gpt2", "on": true, "off": null, "list": [1, 2.5],
                                 "sub": {"k": 7}, "big": 18446744073709551615})");
  const util::JsonFields f(j, kTop);
  CHECK(f.positive("n") == 3);
  CHECK(f.integer("n", 0, 10) == 3);
  CHECK(f.integer("missing", 42) == 42);
  CHECK(f.number("x") == 0.5);
  CHECK(f.number("n") == 3.0);  // an integer is a number
  CHECK(f.string("name") == "gpt2");
  CHECK(f.boolean("on"));
  CHECK(f.boolean("off", false) == false);  // null counts as absent
  CHECK_FALSE(f.has("off"));
  CHECK(f.optional_number("off", 0, 1) == std::nullopt);
  CHECK(f.positive_numbers("list") == std::vector<double>{1.0, 2.5});
  CHECK(f.object("sub").integer("k") == 7);
  CHECK(f.optional_string("absent") == std::nullopt);
}

TEST_CASE("json fields: a wrong member names the file, the path and the value", "[util][json]") {
  const Json j = Json::parse(R"({"n": -3, "s": 5, "b": "yes", "x": 2.5, "sub": {"k": [1, 0]}, "arr": {},
                                 "big": 18446744073709551615})");
  const util::JsonFields f(j, kTop);
  CHECK_THAT(error_of([&] { f.positive("n"); }), Equals("m/config.json: n is -3, not a positive integer"));
  const Json zero = Json::parse(R"({"z": 0})");  // parsed: an unsigned 0
  CHECK_THAT(error_of([&] { util::JsonFields(zero, kTop).positive("z", 5); }),
             Equals("m/config.json: z is 0, not a positive integer"));
  CHECK_THAT(error_of([&] { f.positive("missing"); }), Equals("m/config.json: missing is missing"));
  CHECK_THAT(error_of([&] { f.string("s"); }), Equals("m/config.json: s is an integer, not a string"));
  CHECK_THAT(error_of([&] { f.boolean("b"); }), Equals("m/config.json: b is a string, not true or false"));
  CHECK_THAT(error_of([&] { f.number("x", 0, 1); }), Equals("m/config.json: x is 2.5, outside [0, 1]"));
  CHECK_THAT(error_of([&] { f.integer("n", 0, 9); }), Equals("m/config.json: n is -3, outside [0, 9]"));
  CHECK_THAT(error_of([&] { f.integer("big", 0, 9); }), Equals("m/config.json: big is 18446744073709551615, above 9"));
  CHECK_THAT(error_of([&] { f.object("sub").positive_numbers("k"); }),
             Equals("m/config.json: sub.k[1] is 0, not a positive number"));
  CHECK_THAT(error_of([&] { f.array("arr"); }), Equals("m/config.json: arr is an object, not an array"));
  CHECK_THAT(error_of([&] { util::JsonFields(Json::array(), kTop); }),
             Equals("m/config.json: is an array, not an object"));
}

TEST_CASE("json fields: a place throws the error type of its kind", "[util][json]") {
  const std::string file = "t.json";
  const util::JsonPlace data{&file, "model", util::ErrorKind::kData, "fix it"};
  CHECK_THROWS_AS(util::json_fail(data / "vocab", "is bad"), util::DataError);
  try {
    util::json_fail(data / "vocab" / "'a'", "is bad");
  } catch (const util::DataError& e) {
    CHECK_THAT(std::string(e.what()), Equals("t.json: model.vocab.'a' is bad"));
    CHECK(e.hint() == "fix it");
  }
  try {
    util::json_fail(data[3], "is bad", "another hint");
  } catch (const util::DataError& e) {
    CHECK_THAT(std::string(e.what()), Equals("t.json: model[3] is bad"));
    CHECK(e.hint() == "another hint");
  }
}
