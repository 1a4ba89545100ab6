// Preference data for DPO and its family, in TRL's two forms (docs/notes/preference.md): the text form
// {"prompt": "...", "chosen": "...", "rejected": "..."} and the conversational form, where chosen and
// rejected (and the optional prompt) are lists of messages rendered through the model's chat template.
// A record without a prompt shares the longest common start of its answers (TRL's extract_prompt).
// Each pair becomes the prompt's ids and each completion's ids (EOS ended), cut to the limits as TRL
// cuts them, and B pairs collate into 2B rows, chosen rows first, whose labels are the completions'
// next tokens only.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/packing.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace hftrain::data {

// The fields a preference record's parts are read from (data.prompt_field and the like).
struct PreferenceFields {
  std::string prompt = "prompt";
  std::string chosen = "chosen";
  std::string rejected = "rejected";
  std::string margin = "margin";  // optional: how much better chosen is (a reward model's margin)
};

// One record as written.
struct PreferenceRecord {
  bool conversational = false;
  std::string prompt, chosen, rejected;  // the text form
  // The conversational form: message lists ({"role", "content", ...}); prompt_messages may be empty
  // until extract_prompt moves the answers' shared start into it.
  nlohmann::ordered_json prompt_messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json chosen_messages, rejected_messages;
  std::optional<double> margin;  // the margin field's number, where the record has one
  std::string origin;            // "file:line"
};

// Every record of a JSON Lines file, each with its prompt (extract_prompt where it has none). Throws
// DataError "data file <file>:<line>: ..." naming the field for: malformed JSON or a line that is not
// an object; a missing chosen or rejected field (with the closest key); a part that is neither a
// string nor a list of messages, or parts of both forms; an empty answer; chosen equal to rejected
// (nothing to prefer); a message without a string role and content; a file without records.
std::vector<PreferenceRecord> read_preference(const std::filesystem::path& file, const PreferenceFields& fields);
// A conversational part: a list of messages (non-empty unless may_be_empty), each an object with a
// string role and content; DataError naming `origin` and `field` otherwise.
void check_messages(const nlohmann::ordered_json& messages, const std::string& origin, const std::string& field,
                    bool may_be_empty);
// One record from its line's object (read_preference's checks); `file` and `line` name it.
PreferenceRecord parse_preference(const nlohmann::ordered_json& object, const PreferenceFields& fields,
                                  const std::filesystem::path& file, size_t line);
// Each non-blank line of a JSON Lines file as an object, with its line number; DataError "data file
// <file>:<line>: ..." for malformed JSON or a line that is not an object (`shape` says what one is),
// and for a file without records.
void read_json_objects(const std::filesystem::path& file, const std::string& shape,
                       const std::function<void(const nlohmann::ordered_json& object, size_t line)>& each);

// TRL's implicit prompt: the text form takes the longest common prefix of chosen and rejected (moved
// back one character when the character before the first difference is a space, so the space starts
// the answers); the conversational form takes the messages both lists start with.
void extract_prompt(PreferenceRecord& record);

// How a pair is cut: seq_len bounds each sequence (prompt plus one answer) and keeps its start (the
// answer's end goes, TRL's max_length); max_prompt_len > 0 first keeps the prompt's last tokens
// (TRL's former max_prompt_length).
struct PreferenceLimits {
  int64_t seq_len = 1024;
  int64_t max_prompt_len = 0;
  // Drop a pair whose sequence exceeds seq_len instead of cutting it (TRL's RewardTrainer: a reward
  // model scores the whole sequence's last token).
  bool drop_long = false;
};

// A pair's ids: the prompt's (with the tokenizer's BOS where its post-processor adds one) and each
// answer's, which end with the EOS token (text form) or the template's end of turn (conversational).
struct EncodedPair {
  std::vector<int32_t> prompt, chosen, rejected;
  bool truncated = false;  // a sequence was cut at seq_len, or the prompt at max_prompt_len
  std::optional<float> margin;  // the record's
  // The reference model's summed log-probs of the chosen and rejected answers, where they were
  // computed ahead of training (preference.reference=precomputed).
  std::optional<std::array<float, 2>> reference_logps;
};

// Encodes one record as TRL 1.16 does: the prompt and prompt + answer encoded whole; the prompt is the
// ids it shares with both whole sequences, each answer the rest of its sequence. The text form appends
// the EOS token to each answer; the conversational form renders the prompt with the generation prompt
// and prompt + answer without it (chat_template required; special-token text in a rendering encodes as
// the special token). nullopt when the prompt
// alone fills seq_len (TRL drops such records), or with drop_long when a sequence exceeds it. Throws DataError naming
// the record's origin for a conversational record without a chat template, or a template error.
std::optional<EncodedPair> encode_pair(const tokenizer::Tokenizer& tokenizer,
                                       const tokenizer::ChatTemplate* chat_template, const PreferenceRecord& record,
                                       const PreferenceLimits& limits);

// What collate_pairs and collate_kto share: `rows` right-padded rows, row r holding row(r)'s prompt
// then its answer, cut at `limit` tokens keeping the start, labels on the answer's next tokens only; T
// the longest row rounded up to `multiple`. The caller sets num_target_tokens and what else it carries.
struct AnswerRow {
  const std::vector<int32_t>* prompt;
  const std::vector<int32_t>* answer;
};
HostBatch collate_answer_rows(int64_t rows, const std::function<AnswerRow(int64_t)>& row, int32_t pad_id,
                              int64_t limit, int64_t multiple);

// B pairs (pairs[ids[i]]) as 2B right-padded rows: the B chosen sequences, then the B rejected ones.
// labels[t] is token t + 1 where that token belongs to the answer, kIgnoreIndex elsewhere, so the
// summed log-probs of a row are over its answer only. T is the longest row, rounded up to `multiple`.
// num_target_tokens counts the pairs (rows_per_sample 2). margins holds the pairs' margins (0 where a
// pair has none) when any of them has one; reference_logps the rows' precomputed reference log-probs
// (chosen rows, then rejected) when the pairs have them.
HostBatch collate_pairs(const std::vector<EncodedPair>& pairs, std::span<const uint64_t> ids, int32_t pad_id,
                        int64_t multiple = 1);

}  // namespace hftrain::data
