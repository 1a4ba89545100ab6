// JSON Lines sources: plain documents from one string field, and instruction/chat records whose
// prompt part is context only (no loss) while the response part is trained on.
#pragma once

#include <filesystem>
#include <functional>
#include <string_view>

#include "data/source.h"

namespace hftrain::data {

// Parses `bytes` (the whole file, already checked to be UTF-8 text) line by line. Blank lines are
// skipped. Throws DataError "<file>:<line>: ..." for malformed JSON, a line that is not an object,
// a missing field or one of the wrong type. `chat` selects the instruction/chat reading.
void read_jsonl(const SourceSpec& spec, const std::filesystem::path& file, std::string_view bytes,
                bool chat, const ChatTemplate& tmpl, const std::function<void(Document&&)>& sink);

}  // namespace hftrain::data
