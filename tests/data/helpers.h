// Shared helpers for the data-stage tests.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../config/helpers.h"
#include "../tokenizer/helpers.h"
#include "data/source.h"
#include "data/token_corpus.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace hftrain::test {

// Every document of a source, read as the data stage reads it.
std::vector<data::Document> read_all(const data::SourceSpec& spec, const data::ChatTemplate& chat = {});

// An in-memory corpus of documents given as token lists (each gets `eot` appended) and optional
// per-document loss flags.
std::shared_ptr<data::TokenCorpus> make_corpus(const std::vector<std::vector<uint32_t>>& docs, uint32_t eot,
                                               const std::vector<std::vector<uint8_t>>& train = {});

// What `read` makes of `jsonl` written to a temporary file named `name` (read_preference, read_kto).
template <typename Read>
auto read_jsonl(const std::string& name, const std::string& jsonl, Read read) {
  TempDir d;
  const auto file = d.path() / name;
  std::ofstream(file) << jsonl;
  return read(file);
}

// The message and hint of the DataError `read_jsonl` throws; "no DataError" when it reads.
template <typename Read>
std::string jsonl_error(const std::string& name, const std::string& jsonl, Read read) {
  try {
    read_jsonl(name, jsonl, read);
  } catch (const util::DataError& e) {
    return e.describe();
  }
  return "no DataError";
}

// The BERT fixture (tests/fixtures/data/hf_bert_tokenizer.json) with the post-processor
// BertTokenizerFast writes ([CLS] $A [SEP] / $B:1 [SEP]:1).
std::unique_ptr<tokenizer::Tokenizer> bert_tokenizer();

}  // namespace hftrain::test
