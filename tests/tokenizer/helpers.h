// Shared helpers for the tokenizer-stage tests (the data-stage tests use them too).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "../config/helpers.h"

namespace hftrain::test {

// Text in several scripts, with accents, CJK, emoji, runs of spaces and newlines.
extern const std::vector<std::string> kMultilingual;

// The DataError message `fn` throws; fails the test when it throws nothing or something else.
std::string data_error(const std::function<void()>& fn);

}  // namespace hftrain::test
