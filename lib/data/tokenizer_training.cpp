#include "data/tokenizer_training.h"

namespace hftrain::data {

void add_sources(tokenizer::BpeTrainer& trainer, const std::vector<SourceSpec>& sources, const ChatTemplate& chat) {
  for (const auto& spec : sources) {
    for (const auto& file : expand_source(spec)) {
      if (resolve_format(spec, file) == SourceFormat::kTokens) continue;  // already tokenized
      read_documents(spec, file, chat, [&](Document&& doc) {
        for (const auto& segment : doc.segments) trainer.add_text(segment.text);
      });
    }
  }
}

}  // namespace hftrain::data
