// The render context transformers builds for a chat template (see chat_context.h).
#include "tokenizer/jinja/chat_context.h"

namespace hftrain::tokenizer::jinja {
namespace {

using Json = nlohmann::ordered_json;

Json alias_reasoning(const Json& message) {
  if (!message.is_object()) return message;
  const Json* reasoning = nullptr;
  for (const char* key : {"reasoning_content", "thinking", "reasoning"}) {
    const auto it = message.find(key);
    if (it != message.end() && !it->is_null()) {
      reasoning = &*it;
      break;
    }
  }
  if (!reasoning) return message;
  Json out = Json::object();
  out["thinking"] = *reasoning;
  for (const auto& [k, v] : message.items()) out[k] = v;
  out["reasoning_content"] = *reasoning;
  return out;
}

}  // namespace

Json make_chat_context(const ChatTemplateInputs& inputs) {
  Json context = Json::object();
  Json messages = Json::array();
  for (const auto& m : inputs.messages) messages.push_back(alias_reasoning(m));
  context["messages"] = std::move(messages);
  context["tools"] = inputs.tools;
  context["documents"] = inputs.documents;
  context["add_generation_prompt"] = inputs.add_generation_prompt;
  for (const auto& [k, v] : inputs.extra.items()) context[k] = v;
  return context;
}

}  // namespace hftrain::tokenizer::jinja
