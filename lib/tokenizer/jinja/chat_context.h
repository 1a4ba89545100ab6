// The render context transformers builds for a chat template (render_jinja_template in
// transformers.utils.chat_template_utils): `messages`, `tools` and `documents` (null when absent),
// `add_generation_prompt`, then the extra keyword arguments (bos_token, eos_token, ...). Each message
// that carries reasoning under `reasoning_content`, `thinking` or `reasoning` gets it under `thinking`
// (first) and `reasoning_content` (last), as transformers' _alias_reasoning_fields does.
// continue_final_message is not implemented.
#pragma once

#include <nlohmann/json.hpp>

namespace hftrain::tokenizer::jinja {

struct ChatTemplateInputs {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;      // null, or an array of JSON schemas
  nlohmann::ordered_json documents;  // null, or an array of objects
  bool add_generation_prompt = false;
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();  // further template variables
};

nlohmann::ordered_json make_chat_context(const ChatTemplateInputs& inputs);

}  // namespace hftrain::tokenizer::jinja
