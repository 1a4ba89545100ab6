#include "data/jsonl_reader.h"

#include <nlohmann/json.hpp>

#include "data/chat_render.h"
#include "data/text_checks.h"
#include "util/error.h"
#include "util/strings.h"
#include "util/json_depth.h"

namespace hftrain::data {
namespace {

using Json = nlohmann::json;

struct LineContext {
  const std::filesystem::path& file;
  size_t line;
  std::string where() const { return "data file " + file.string() + ":" + std::to_string(line); }
};

const std::string& string_field(const LineContext& at, const Json& obj, const std::string& field) {
  auto it = obj.find(field);
  if (it == obj.end()) {
    std::vector<std::string> keys;
    for (const auto& item : obj.items()) keys.push_back(item.key());
    auto close = util::closest_matches(field, keys);
    std::string hint = close.empty() ? "the line's keys are: " + util::join(keys, ", ")
                                     : "did you mean '" + close.front() + "'? (set the source's field name)";
    throw util::DataError(at.where() + ": the record has no field '" + field + "'", hint);
  }
  if (!it->is_string()) {
    throw util::DataError(at.where() + ": field '" + field + "' is a " + it->type_name() + ", not a string",
                          "each record's '" + field + "' must be a JSON string");
  }
  const auto& text = it->get_ref<const std::string&>();
  check_text_field(at.file, at.line, text);
  return text;
}

Document chat_document(const SourceSpec& spec, const LineContext& at, const Json& obj, const ChatTemplate& tmpl) {
  Document doc;
  doc.origin = at.file.string() + ":" + std::to_string(at.line);
  auto messages = obj.find(spec.messages_field);
  if (messages == obj.end()) {
    // The prompt/response form: the prompt is context, the response is trained on.
    const std::string& prompt = string_field(at, obj, spec.prompt_field);
    const std::string& response = string_field(at, obj, spec.response_field);
    doc.segments.push_back(Segment{prompt, false});
    doc.segments.push_back(Segment{response, true});
    return doc;
  }
  if (!messages->is_array() || messages->empty()) {
    throw util::DataError(at.where() + ": field '" + spec.messages_field + "' must be a non-empty list of "
                              "{\"role\": ..., \"content\": ...} objects", "fix that line");
  }
  bool any_train = false;
  size_t index = 0;
  for (const auto& message : *messages) {
    if (!message.is_object()) {
      throw util::DataError(at.where() + ": message " + std::to_string(index) + " is not an object",
                            "each message is {\"role\": ..., \"content\": ...}");
    }
    const std::string& role = string_field(at, message, "role");
    const std::string& content = string_field(at, message, "content");
    const bool train = role == tmpl.train_role;
    any_train = any_train || train;
    doc.segments.push_back(Segment{tmpl.role_prefix + role + tmpl.role_suffix, false});
    doc.segments.push_back(Segment{content + tmpl.message_end, train});
    ++index;
  }
  if (!any_train) {
    throw util::DataError(at.where() + ": the conversation has no '" + tmpl.train_role + "' message",
                          "only " + tmpl.train_role + " messages carry loss; a record without one teaches nothing");
  }
  return doc;
}

}  // namespace

void read_jsonl(const SourceSpec& spec, const std::filesystem::path& file, std::string_view bytes, bool chat,
                const ChatTemplate& tmpl, const std::function<void(Document&&)>& sink) {
  size_t line_no = 0;
  size_t count = 0;
  size_t pos = 0;
  while (pos < bytes.size()) {
    ++line_no;
    size_t nl = bytes.find('\n', pos);
    size_t end = nl == std::string_view::npos ? bytes.size() : nl;
    std::string_view line = bytes.substr(pos, end - pos);
    pos = end + 1;
    if (util::trim(line).empty()) continue;
    LineContext at{file, line_no};
    if (chat && tmpl.model_template) {
      sink(render_chat_document(spec, file.string() + ":" + std::to_string(line_no), line, *tmpl.model_template));
      ++count;
      continue;
    }
    const Json obj = util::parse_json_or_throw<util::DataError>(
        line, file.string() + ":" + std::to_string(line_no), at.where() + ": malformed JSON",
        "each line of a JSONL file must be one complete JSON object");
    if (!obj.is_object()) {
      throw util::DataError(at.where() + ": the line is a JSON " + std::string(obj.type_name()) + ", not an object",
                            "each line of a JSONL file must be one JSON object");
    }
    if (chat) {
      sink(chat_document(spec, at, obj, tmpl));
    } else {
      const std::string& text = string_field(at, obj, spec.text_field);
      if (text.empty()) continue;
      sink(Document{{Segment{text, true}}, file.string() + ":" + std::to_string(line_no)});
    }
    ++count;
  }
  if (count == 0) {
    throw util::DataError("data file " + file.string() + ":1: holds no JSON record", "remove it or exclude it");
  }
}

}  // namespace hftrain::data
