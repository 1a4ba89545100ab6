// How deep hftrain lets the JSON files a user hands it nest (tokenizer.json, config.json,
// safetensors headers and indexes, checkpoint manifests and indexes, adapter configs, JSONL
// records). Real files nest a handful of levels; a hostile one nested a million deep would
// overflow the stack of any recursive walk over it (copying, printing or interpreting the parsed
// value). A linear scan before parsing refuses it, naming the file and the line.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace hftrain::util {

inline constexpr int kMaxJsonDepth = 256;

// The 1-based line on which `text` first opens an array or object deeper than `max_depth`
// (strings and their escapes skipped), or nullopt. Not a validator: malformed JSON is the
// parser's to report.
std::optional<size_t> json_too_deep(std::string_view text, int max_depth = kMaxJsonDepth);

// Throws ErrorT (a util::Error) "<where>:<line>: JSON nested deeper than 256 levels ..." when
// `text` is too deep.
template <class ErrorT>
void check_json_depth(std::string_view text, const std::string& where, int max_depth = kMaxJsonDepth);

// `text` parsed by nlohmann::json after check_json_depth: a discarded value (is_discarded()) when
// it is not JSON, for the caller to name what it expected. What every reader of a user's JSON file
// calls.
template <class ErrorT>
nlohmann::json parse_json(std::string_view text, const std::string& where);

// `text` parsed as JsonT (nlohmann::json or ordered_json) after check_json_depth, for readers that
// name what was wrong: throws ErrorT "<message> (<the library's reason>)" with `hint` when it is not
// JSON, a malformed text or a number past double's range alike (the library's out_of_range, which
// a handler of parse_error alone lets through).
template <class ErrorT, class JsonT = nlohmann::json>
JsonT parse_json_or_throw(std::string_view text, const std::string& where, const std::string& message,
                          const std::string& hint);

// An nlohmann::json exception's what() without the library's "[json.exception.type_error.302] "
// prefix: "type must be number, but is string", "parse error at line 1, column 1: ...". Messages
// quote the reason, not the library's name for it.
std::string plain_json_error(const std::string& what);

}  // namespace hftrain::util
