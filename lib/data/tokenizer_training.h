// Training a tokenizer on a run's data: every document of the sources, read and checked as the
// data stage reads them for training, goes to a BPE trainer (`hftrain tokenizer train`).
#pragma once

#include <vector>

#include "data/source.h"
#include "tokenizer/bpe_trainer.h"

namespace hftrain::data {

// Adds the text of every document of `sources` (token shards are skipped: already tokenized).
void add_sources(tokenizer::BpeTrainer& trainer, const std::vector<SourceSpec>& sources, const ChatTemplate& chat = {});

}  // namespace hftrain::data
