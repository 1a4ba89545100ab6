#include "tokenizer/regex_split.h"

#include <algorithm>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "util/error.h"

namespace hftrain::tokenizer {

struct RegexSplitter::Impl {
  pcre2_code* code = nullptr;
  pcre2_match_context* context = nullptr;
  ~Impl() {
    if (context) pcre2_match_context_free(context);
    if (code) pcre2_code_free(code);
  }
};

RegexSplitter::RegexSplitter(std::string pattern, const std::string& source)
    : pattern_(std::move(pattern)), source_(source), impl_(std::make_unique<Impl>()) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern_.data()), pattern_.size(), PCRE2_UTF | PCRE2_UCP,
                              &error, &offset, nullptr);
  if (!impl_->code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    throw util::DataError(source + ": the Split pre-tokenizer's regex does not compile at offset " +
                              std::to_string(offset) + ": " + reinterpret_cast<const char*>(message),
                          "is the tokenizer.json damaged?");
  }
  pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);  // faster when available; the interpreter otherwise
  // A pattern that backtracks catastrophically fails one match with an error instead of hanging:
  // pre-tokenizer patterns need a few steps per character, far below this.
  impl_->context = pcre2_match_context_create(nullptr);
  if (impl_->context) pcre2_set_match_limit(impl_->context, 1'000'000);
}

RegexSplitter::~RegexSplitter() = default;

std::vector<std::pair<size_t, size_t>> RegexSplitter::matches(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> out;
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
      pcre2_match_data_create_from_pattern(impl_->code, nullptr), &pcre2_match_data_free);
  if (!match) throw util::DataError("splitting text for the tokenizer failed: out of memory");
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;  // where the next search begins
  while (start <= text.size()) {
    // The first call checks that the whole text is valid UTF-8; later ones (at character
    // boundaries) need not check it again, which would make long texts quadratic.
    const uint32_t options = start == 0 ? 0 : PCRE2_NO_UTF_CHECK;
    const int rc = pcre2_match(impl_->code, subject, text.size(), start, options, match.get(), impl_->context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof(message));
      throw util::DataError(source_ + ": splitting text with the regex failed at byte " + std::to_string(start) +
                                " of a " + std::to_string(text.size()) + "-byte text: " +
                                reinterpret_cast<const char*>(message),
                            "the tokenizer.json's regular expression (a Split or Replace pattern) cannot handle this "
                            "text: it backtracks too much, or the text is not valid UTF-8");
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match.get());
    const size_t begin = std::max<size_t>(ov[0], start), end = ov[1];
    if (end <= begin) {  // an empty match (or \K trickery): step over one character and search again
      if (start >= text.size()) break;
      ++start;
      while (start < text.size() && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) ++start;
      continue;
    }
    out.emplace_back(begin, end);
    start = end;
  }
  return out;
}

std::vector<std::string_view> RegexSplitter::split(std::string_view text) const {
  std::vector<std::string_view> out;
  size_t emitted = 0;  // text before this is in `out`
  for (const auto& [begin, end] : matches(text)) {
    if (begin > emitted) out.push_back(text.substr(emitted, begin - emitted));  // the gap, isolated too
    out.push_back(text.substr(begin, end - begin));
    emitted = end;
  }
  if (emitted < text.size()) out.push_back(text.substr(emitted));
  return out;
}

}  // namespace hftrain::tokenizer
