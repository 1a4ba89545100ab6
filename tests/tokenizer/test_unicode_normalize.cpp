// Unicode normal forms and lowercasing from hftrain's generated tables, on the cases that need
// each part of the algorithm (expected values from the `tokenizers` library; the conformance test
// tokenizer_hf_tokenizers.py sweeps every code point).
#include <catch2/catch.hpp>

#include "tokenizer/unicode.h"
#include "tokenizer/unicode_normalize.h"

using namespace hftrain::tokenizer;
using unicode::NormalForm;

TEST_CASE("NFC composes, including Hangul and across reordered marks", "[data][unicode]") {
  CHECK(unicode::normalize("e\u0301 \u1112\u1161\u11ab A\u030a", NormalForm::kNfc) == "é 한 Å");
  // ṩ: s + dot below + dot above in either order composes to one character.
  CHECK(unicode::normalize("s\u0307\u0323", NormalForm::kNfc) == "\u1e69");
  CHECK(unicode::normalize("s\u0323\u0307", NormalForm::kNfc) == "\u1e69");
  CHECK(unicode::normalize("ﬁ", NormalForm::kNfc) == "ﬁ");  // compatibility mappings stay
  CHECK(unicode::normalize("\u0958", NormalForm::kNfc) ==
        "\u0915\u093c");  // a composition exclusion
}

TEST_CASE("NFD decomposes fully and orders combining marks", "[data][unicode]") {
  CHECK(unicode::normalize("é 한 ǖ", NormalForm::kNfd) ==
        "e\u0301 \u1112\u1161\u11ab u\u0308\u0304");
  CHECK(unicode::normalize("a\u0301\u0323", NormalForm::kNfd) ==
        "a\u0323\u0301");  // class 220 before 230
  CHECK(unicode::combining_class(0x301) == 230);
  CHECK(unicode::combining_class(0x323) == 220);
  CHECK(unicode::combining_class('a') == 0);
}

TEST_CASE("NFKC and NFKD apply compatibility mappings", "[data][unicode]") {
  CHECK(unicode::normalize("ﬁ ①  ｆｕｌｌ ㍿ x²", NormalForm::kNfkc) == "fi 1  full 株式会社 x2");
  CHECK(unicode::normalize("ǅ ẛ̣", NormalForm::kNfkd) == "Dz\u030c s\u0323\u0307");
}

TEST_CASE("ASCII and the empty string pass through every form", "[data][unicode]") {
  for (auto form : {NormalForm::kNfc, NormalForm::kNfd, NormalForm::kNfkc, NormalForm::kNfkd}) {
    CHECK(unicode::normalize("plain ASCII text!", form) == "plain ASCII text!");
    CHECK(unicode::normalize("", form).empty());
  }
}

TEST_CASE("lowercase maps each character on its own, as Rust's to_lowercase", "[data][unicode]") {
  auto lower = [](const std::string& s) {
    return unicode::to_utf8(unicode::lowercase(unicode::to_code_points(s)));
  };
  CHECK(lower("İSTANBUL ΟΔΟΣ ẞ Ǆ") ==
        "i̇stanbul οδοσ ß ǆ");  // no final sigma; İ becomes two characters
  CHECK(lower("ABC xyz") == "abc xyz");
}

TEST_CASE("invalid UTF-8 becomes U+FFFD, one byte at a time", "[data][unicode]") {
  CHECK(unicode::valid_utf8("ok") == "ok");
  CHECK(unicode::valid_utf8("a\xff"
                            "b") ==
        "a\ufffd"
        "b");
  CHECK(unicode::valid_utf8("\xc0\x80") == "\ufffd\ufffd");            // overlong NUL
  CHECK(unicode::valid_utf8("\xed\xa0\x80") == "\ufffd\ufffd\ufffd");  // a surrogate
  CHECK(unicode::valid_utf8("\xe4\xb8") == "\ufffd\ufffd");            // cut short
  CHECK(unicode::normalize("\xff", NormalForm::kNfc) == "\ufffd");
}

TEST_CASE("character classes of the Hugging Face pre-tokenizers and normalizers",
          "[data][unicode]") {
  CHECK(unicode::is_punctuation(','));
  CHECK(unicode::is_punctuation('$'));     // ASCII punctuation includes symbols
  CHECK(unicode::is_punctuation(0x3002));  // 。
  CHECK_FALSE(unicode::is_punctuation('a'));
  CHECK(unicode::is_chinese(0x4e2d));
  CHECK_FALSE(unicode::is_chinese(0x3042));  // hiragana is not
  CHECK(unicode::is_word('_'));
  CHECK(unicode::is_word(0x301));  // marks are word characters for the regex crate
  CHECK_FALSE(unicode::is_word('-'));
  CHECK(unicode::is_numeric(0x0663));               // Arabic-Indic three
  CHECK(unicode::is_combining_mark(0x93f));         // a spacing mark: StripAccents removes it...
  CHECK_FALSE(unicode::is_nonspacing_mark(0x93f));  // ...BertNormalizer keeps it
  CHECK(unicode::is_bert_control(0x7));
  CHECK_FALSE(unicode::is_bert_control('\t'));
}
