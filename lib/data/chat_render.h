// Chat records rendered through the model's own chat template (tokenizer/chat_template.h): a JSONL
// line's conversation becomes one document whose segments alternate between context (no loss) and
// the template's loss spans (assistant content and the end-of-turn text that closes it). The
// document's special-token text (<|im_start|>, <|eot_id|>) encodes as special tokens, as
// transformers' apply_chat_template(tokenize=True) encodes it.
#pragma once

#include <string>
#include <string_view>

#include "data/source.h"
#include "tokenizer/chat_template.h"

namespace hftrain::data {

// `line` is the record (a JSON object) at `origin` ("file:line"): the messages form
// ({"messages": [{"role", "content", ...}], "tools": [...]}) or the prompt/response form (a user
// and an assistant message). Throws DataError naming `origin` (and the template and its line) for
// a malformed record, raise_exception, or a conversation with nothing to train on.
Document render_chat_document(const SourceSpec& spec, const std::string& origin, std::string_view line,
                              const tokenizer::ChatTemplate& chat_template);

}  // namespace hftrain::data
