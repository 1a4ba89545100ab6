#include "helpers.h"

#include "util/error.h"

namespace hftrain::test {

const std::vector<std::string> kMultilingual = {
    "Hello, world! It's a test: don't panic, we'll see.",
    "Café déjà vu — naïve façade, Ærøskøbing; Ünïcödé.",
    "日本語のテキストと中文文本，还有한국어 문장。",
    "Emoji: 😀🎉👍🏽 and a family 👨‍👩‍👧‍👦, flags 🇫🇷🇯🇵.",
    "Runs   of    spaces\n\n\nand\ttabs\t\t and newlines\r\n   indented\n",
    "Numbers 1234567 ١٢٣ ½ Ⅻ and symbols @#$%^&*()[]{} <|endoftext|> text.",
    "Ελληνικά, русский текст, עברית, العربية, हिन्दी.",
    "   leading spaces and trailing spaces   ",
};

std::string data_error(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const util::DataError& e) {
    return e.what();
  }
  FAIL("expected a DataError");
  return {};
}

}  // namespace hftrain::test
