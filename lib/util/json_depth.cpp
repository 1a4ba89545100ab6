#include "util/json_depth.h"

#include "util/error.h"
#include "util/strings.h"

namespace hftrain::util {

std::optional<size_t> json_too_deep(std::string_view text, int max_depth) {
  int depth = 0;
  size_t line = 1;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is (a line break inside a string is invalid anyway)
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '[':
      case '{':
        if (++depth > max_depth) return line;
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      default: break;
    }
  }
  return std::nullopt;
}

std::string plain_json_error(const std::string& what) {
  if (what.rfind("[json.exception.", 0) != 0) return what;
  const size_t end = what.find("] ");
  return end == std::string::npos ? what : what.substr(end + 2);
}

template <class ErrorT>
void check_json_depth(std::string_view text, const std::string& where, int max_depth) {
  if (const auto line = json_too_deep(text, max_depth)) {
    throw ErrorT(where + ":" + std::to_string(*line) + ": JSON nested deeper than " + std::to_string(max_depth) +
                     " levels of arrays and objects; no file hftrain reads needs that many",
                 "the file is damaged or not what it should be: replace it with the original");
  }
}

template <class ErrorT>
nlohmann::json parse_json(std::string_view text, const std::string& where) {
  check_json_depth<ErrorT>(text, where);
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

template <class ErrorT, class JsonT>
JsonT parse_json_or_throw(std::string_view text, const std::string& where, const std::string& message,
                          const std::string& hint) {
  check_json_depth<ErrorT>(text, where);
  try {
    return JsonT::parse(text);
  } catch (const typename JsonT::exception& e) {
    throw ErrorT(message + " (" + clip(plain_json_error(e.what()), 200) + ")", hint);
  }
}

template nlohmann::json parse_json_or_throw<DataError>(std::string_view, const std::string&, const std::string&,
                                                       const std::string&);
template nlohmann::ordered_json parse_json_or_throw<DataError, nlohmann::ordered_json>(std::string_view,
                                                                                      const std::string&,
                                                                                      const std::string&,
                                                                                      const std::string&);
template nlohmann::json parse_json_or_throw<CheckpointError>(std::string_view, const std::string&, const std::string&,
                                                             const std::string&);
template nlohmann::json parse_json<DataError>(std::string_view, const std::string&);
template nlohmann::json parse_json<CheckpointError>(std::string_view, const std::string&);
template void check_json_depth<DataError>(std::string_view, const std::string&, int);
template void check_json_depth<CheckpointError>(std::string_view, const std::string&, int);
template void check_json_depth<ConfigError>(std::string_view, const std::string&, int);

}  // namespace hftrain::util
