// KTO's unpaired data (TRL's KTOTrainer, docs/notes/preference.md): {"prompt": ..., "completion": ...,
// "label": true|false}, text or conversational (message lists rendered through the chat template), the
// label marking the completion desirable or not. A preference record (chosen and rejected) on a line
// gives two: its chosen answer desirable, its rejected one not. Each example becomes the prompt's ids
// and the completion's (EOS ended), encoded and cut as a preference pair's answer is (preference.h);
// B examples collate into 2B rows: the B examples, then the B KL rows that pair each prompt with the
// previous example's completion (TRL's rotation by one within the batch), labels on the completions.
#pragma once

#include <filesystem>
#include <optional>
#include <span>
#include <vector>

#include "data/preference.h"

namespace hftrain::data {

struct KtoFields {
  std::string prompt = "prompt";
  std::string completion = "completion";
  std::string label = "label";
  PreferenceFields paired;  // a line with chosen and rejected instead
};

// One example as written: a preference record whose chosen and rejected are both the completion.
struct KtoRecord {
  PreferenceRecord record;
  bool desirable = true;
};

// Every example of a JSON Lines file. DataError "data file <file>:<line>: ..." naming the field for a
// missing prompt, completion or label (with the closest key), a label that is not true or false, a
// part that is neither a string nor a list of messages or parts of both forms, an empty completion,
// a malformed message, and the preference record's own errors on a paired line.
std::vector<KtoRecord> read_kto(const std::filesystem::path& file, const KtoFields& fields);

struct KtoExample {
  std::vector<int32_t> prompt, completion;
  bool desirable = true;
  bool truncated = false;
};

// As encode_pair encodes an answer: nullopt when the prompt alone fills seq_len.
std::optional<KtoExample> encode_kto(const tokenizer::Tokenizer& tokenizer,
                                     const tokenizer::ChatTemplate* chat_template, const KtoRecord& record,
                                     const PreferenceLimits& limits);

// B examples (examples[ids[i]]) as 2B right-padded rows: the B examples, then row B + i holding
// example i's prompt and example (i - 1 mod B)'s completion, each cut at seq_len keeping its start.
// desirable holds the examples' labels; num_target_tokens counts the examples (rows_per_sample 2).
HostBatch collate_kto(const std::vector<KtoExample>& examples, std::span<const uint64_t> ids, int32_t pad_id,
                      int64_t seq_len, int64_t multiple = 1);

}  // namespace hftrain::data
