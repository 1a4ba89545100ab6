#include "data/chat_render.h"

#include "util/error.h"
#include "util/json_depth.h"

namespace hftrain::data {
using Json = nlohmann::ordered_json;

namespace {

const std::string& text_field(const std::string& origin, const Json& obj, const std::string& field) {
  auto it = obj.find(field);
  if (it == obj.end() || !it->is_string()) {
    throw util::DataError("data file " + origin + ": field '" + field + "' is missing or not a string",
                          "each chat record needs '" + field + "' as a JSON string");
  }
  return it->get_ref<const std::string&>();
}

Json conversation(const SourceSpec& spec, const std::string& origin, const Json& record) {
  auto messages = record.find(spec.messages_field);
  if (messages == record.end()) {
    return Json::array({Json{{"role", "user"}, {"content", text_field(origin, record, spec.prompt_field)}},
                        Json{{"role", "assistant"}, {"content", text_field(origin, record, spec.response_field)}}});
  }
  if (!messages->is_array() || messages->empty()) {
    throw util::DataError("data file " + origin + ": field '" + spec.messages_field +
                              "' must be a non-empty list of "
                              "{\"role\": ..., \"content\": ...} objects", "fix that line");
  }
  size_t index = 0;
  for (const auto& message : *messages) {
    if (!message.is_object() || !message.contains("role") || !message["role"].is_string()) {
      throw util::DataError("data file " + origin + ": message " + std::to_string(index) +
                                " is not an object with a string 'role'",
                            "each message is {\"role\": ..., \"content\": ...}");
    }
    ++index;
  }
  return *messages;
}

}  // namespace

Document render_chat_document(const SourceSpec& spec, const std::string& origin, std::string_view line,
                              const tokenizer::ChatTemplate& chat_template) {
  // Parsed again, keeping the keys' order: tojson prints tool schemas and arguments as written.
  const Json record =
      util::parse_json_or_throw<util::DataError, Json>(line, origin, "data file " + origin + ": malformed JSON",
                                                       "each line of a JSONL file must be one complete JSON object");
  if (!record.is_object()) {
    throw util::DataError("data file " + origin + ": the line is a JSON " + std::string(record.type_name()) +
                              ", not an object",
                          "each line of a JSONL file must be one JSON object");
  }
  const Json messages = conversation(spec, origin, record);
  const Json tools = record.contains("tools") ? record["tools"] : Json();
  tokenizer::ChatRendering rendered;
  try {
    rendered = chat_template.render_for_training(messages, tools);
  } catch (const util::Error& e) {
    throw util::DataError("data file " + origin + ": " + e.what(),
                          e.hint().empty() ? "fix that record or the template" : e.hint());
  }
  Document doc;
  doc.origin = origin;
  doc.special_tokens = true;
  size_t at = 0;
  for (const auto& [begin, end] : rendered.train_spans) {
    if (begin > at) doc.segments.push_back(Segment{rendered.text.substr(at, begin - at), false});
    doc.segments.push_back(Segment{rendered.text.substr(begin, end - begin), true});
    at = end;
  }
  if (at < rendered.text.size()) doc.segments.push_back(Segment{rendered.text.substr(at), false});
  return doc;
}

}  // namespace hftrain::data
