#include "data/preference.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "data/classification_batch.h"
#include "data/text_checks.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_depth.h"
#include "util/strings.h"

namespace hftrain::data {
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

constexpr const char* kShape =
    R"({"prompt": "...", "chosen": "...", "rejected": "..."}, or chosen and rejected as lists of messages)";

[[noreturn]] void bad(const std::string& origin, const std::string& what, const std::string& hint = kShape) {
  throw util::DataError("data file " + origin + ": " + what, hint);
}

}  // namespace

// A conversational part: a non-empty list of messages, each an object with a string role and content.
void check_messages(const Json& messages, const std::string& origin, const std::string& field, bool may_be_empty) {
  if (messages.empty() && !may_be_empty) bad(origin, "field '" + field + "' is an empty list of messages");
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages[i];
    const std::string at = "field '" + field + "' message " + std::to_string(i);
    if (!m.is_object()) bad(origin, at + " is a JSON " + std::string(m.type_name()) + ", not an object");
    for (const char* key : {"role", "content"}) {
      if (!m.contains(key) || !m[key].is_string()) {
        bad(origin, at + " has no string '" + key + "'", R"(a message is {"role": "user", "content": "..."})");
      }
    }
  }
}

PreferenceRecord parse_preference(const Json& obj, const PreferenceFields& f, const fs::path& file, size_t line) {
  PreferenceRecord r;
  r.origin = file.string() + ":" + std::to_string(line);
  std::vector<std::string> keys;
  for (const auto& item : obj.items()) keys.push_back(item.key());
  const auto part = [&](const std::string& name, bool required) -> const Json* {
    const auto it = obj.find(name);
    if (it == obj.end() || it->is_null()) {
      if (!required) return nullptr;
      const auto close = util::closest_matches(name, keys);
      bad(r.origin, "the record has no field '" + name + "'",
          close.empty() ? "the fields are: " + util::join(keys, ", ")
                        : "did you mean '" + close.front() + "'? (name the field in data.*_field)");
    }
    if (!it->is_string() && !it->is_array()) {
      bad(r.origin,
          "field '" + name + "' is a JSON " + std::string(it->type_name()) + ", not a string or a list of messages");
    }
    return &*it;
  };
  const Json* prompt = part(f.prompt, false);
  const Json& chosen = *part(f.chosen, true);
  const Json& rejected = *part(f.rejected, true);
  r.conversational = chosen.is_array();
  for (const auto& [name, value] : {std::pair{&f.chosen, &chosen}, {&f.rejected, &rejected}, {&f.prompt, prompt}}) {
    if (value && value->is_array() != r.conversational) {
      bad(r.origin,
          "field '" + *name + "' is " + (value->is_array() ? "a list of messages" : "a string") + ", but field '" +
              f.chosen + "' is " + (r.conversational ? "a list of messages" : "a string"),
          "a record is all text or all messages");
    }
  }
  if (r.conversational) {
    check_messages(chosen, r.origin, f.chosen, false);
    check_messages(rejected, r.origin, f.rejected, false);
    if (prompt) check_messages(*prompt, r.origin, f.prompt, true);
    r.chosen_messages = chosen;
    r.rejected_messages = rejected;
    if (prompt) r.prompt_messages = *prompt;
  } else {
    r.chosen = chosen.get<std::string>();
    r.rejected = rejected.get<std::string>();
    if (prompt) r.prompt = prompt->get<std::string>();
    for (const std::string* text : {&r.chosen, &r.rejected, &r.prompt}) check_text_field(file, line, *text);
  }
  if (const auto it = obj.find(f.margin); it != obj.end() && !it->is_null()) {
    if (!it->is_number() || !std::isfinite(it->get<double>())) {
      bad(r.origin, "field '" + f.margin + "' is " + it->dump() + ", not a finite number",
          "the margin says by how much chosen is better (data.margin_field names it)");
    }
    r.margin = it->get<double>();
  }
  if (!prompt) extract_prompt(r);
  const bool same = r.conversational ? r.chosen_messages == r.rejected_messages : r.chosen == r.rejected;
  if (same) bad(r.origin, "chosen and rejected are the same: nothing to prefer", "drop the record, or fix its answers");
  if (r.conversational ? r.chosen_messages.empty() || r.rejected_messages.empty()
                       : r.chosen.empty() || r.rejected.empty()) {
    bad(r.origin, std::string("an empty ") + (prompt ? "answer" : "answer once the shared prompt is taken out"),
        "every answer needs text of its own to score");
  }
  return r;
}

namespace {

// Ids with the tokenizer's special tokens around them (its post-processor: a BOS), as transformers'
// tokenizer(text) frames a text.
std::vector<int32_t> framed(const tokenizer::Tokenizer& tok, const std::vector<int32_t>& ids,
                            const std::string& origin) {
  return frame_ids(tok, ids, nullptr, origin).ids;
}

}  // namespace

void read_json_objects(const fs::path& file, const std::string& shape,
                       const std::function<void(const Json& object, size_t line)>& each) {
  const std::string bytes = util::read_file<util::DataError>(file, "data file", size_t{1} << 34);
  check_text_file(file, bytes);
  size_t line = 0, records = 0;
  for (size_t pos = 0; pos < bytes.size();) {
    const size_t end = std::min(bytes.find('\n', pos), bytes.size());
    const std::string_view text = std::string_view(bytes).substr(pos, end - pos);
    pos = end + 1;
    ++line;
    if (util::trim(text).empty()) continue;
    const std::string origin = file.string() + ":" + std::to_string(line);
    const Json obj = util::parse_json_or_throw<util::DataError, Json>(
        text, origin, "data file " + origin + ": malformed JSON", "each line is one JSON object: " + shape);
    if (!obj.is_object()) bad(origin, "the line is a JSON " + std::string(obj.type_name()) + ", not an object", shape);
    each(obj, line);
    ++records;
  }
  if (records == 0) throw util::DataError("data file " + file.string() + " holds no records", shape);
}

std::vector<PreferenceRecord> read_preference(const fs::path& file, const PreferenceFields& fields) {
  std::vector<PreferenceRecord> out;
  read_json_objects(file, kShape,
                    [&](const Json& obj, size_t line) { out.push_back(parse_preference(obj, fields, file, line)); });
  return out;
}

void extract_prompt(PreferenceRecord& r) {
  if (r.conversational) {
    size_t shared = 0;
    while (shared < r.chosen_messages.size() && shared < r.rejected_messages.size() &&
           r.chosen_messages[shared] == r.rejected_messages[shared]) {
      ++shared;
    }
    for (size_t i = 0; i < shared; ++i) r.prompt_messages.push_back(r.chosen_messages[i]);
    r.chosen_messages.erase(r.chosen_messages.begin(), r.chosen_messages.begin() + static_cast<ptrdiff_t>(shared));
    r.rejected_messages.erase(r.rejected_messages.begin(),
                              r.rejected_messages.begin() + static_cast<ptrdiff_t>(shared));
    return;
  }
  const size_t n = std::min(r.chosen.size(), r.rejected.size());
  size_t idx = 0;
  while (idx < n && r.chosen[idx] == r.rejected[idx]) ++idx;
  // The prefix ends before the first difference; a space just before it belongs to the answers.
  if (idx > 0 && r.chosen[idx - 1] == ' ') --idx;
  r.prompt = r.chosen.substr(0, idx);
  r.chosen.erase(0, idx);
  r.rejected.erase(0, idx);
}

std::optional<EncodedPair> encode_pair(const tokenizer::Tokenizer& tok, const tokenizer::ChatTemplate* chat,
                                       const PreferenceRecord& r, const PreferenceLimits& limits) {
  EncodedPair out;
  std::vector<int32_t> whole_chosen, whole_rejected;
  if (r.conversational) {
    if (!chat) {
      bad(r.origin, "a conversational pair needs the model's chat template",
          "set data.chat_template (auto reads the tokenizer's), or write the record as text");
    }
    const auto rendered = [&](const Json& answer) {
      Json conversation = r.prompt_messages;
      for (const Json& m : answer) conversation.push_back(m);
      return tok.encode(chat->render_for_training(conversation, Json()).text, /*allow_special=*/true);
    };
    out.prompt = tok.encode(chat->render_prompt(r.prompt_messages), /*allow_special=*/true);
    whole_chosen = rendered(r.chosen_messages);
    whole_rejected = rendered(r.rejected_messages);
  } else {
    const auto with_eos = [&](const std::string& answer) {
      // TRL appends the EOS token's text and encodes it as the token; special-token text in the data
      // itself stays text here, as everywhere in hftrain's data, so the id is appended instead.
      std::vector<int32_t> ids = tok.encode(r.prompt + answer);
      ids.push_back(tok.eot_id());
      return framed(tok, ids, r.origin);
    };
    out.prompt = framed(tok, tok.encode(r.prompt), r.origin);
    whole_chosen = with_eos(r.chosen);
    whole_rejected = with_eos(r.rejected);
  }
  // The answers start where the prompt's ids and the whole sequences' part (TRL 1.16): a prompt whose
  // last token merges with an answer's first, or that a template renders otherwise alone, loses that
  // end, as in TRL.
  const auto shared = [&](const std::vector<int32_t>& whole) {
    return static_cast<size_t>(
        std::mismatch(out.prompt.begin(), out.prompt.end(), whole.begin(), whole.end()).first - out.prompt.begin());
  };
  if (limits.drop_long && static_cast<int64_t>(std::max(whole_chosen.size(), whole_rejected.size())) > limits.seq_len) {
    return std::nullopt;
  }
  if (r.margin) out.margin = static_cast<float>(*r.margin);
  const size_t prompt_len = std::min(shared(whole_chosen), shared(whole_rejected));
  out.prompt.resize(prompt_len);
  out.chosen.assign(whole_chosen.begin() + static_cast<ptrdiff_t>(prompt_len), whole_chosen.end());
  out.rejected.assign(whole_rejected.begin() + static_cast<ptrdiff_t>(prompt_len), whole_rejected.end());
  if (limits.max_prompt_len > 0 && static_cast<int64_t>(out.prompt.size()) > limits.max_prompt_len) {
    out.prompt.erase(out.prompt.begin(), out.prompt.end() - limits.max_prompt_len);
    out.truncated = true;
  }
  const auto room = limits.seq_len - static_cast<int64_t>(out.prompt.size());
  if (room <= 0) return std::nullopt;
  for (std::vector<int32_t>* a : {&out.chosen, &out.rejected}) {
    if (static_cast<int64_t>(a->size()) > room) {
      a->resize(static_cast<size_t>(room));
      out.truncated = true;
    }
  }
  return out;
}

HostBatch collate_answer_rows(int64_t rows, const std::function<AnswerRow(int64_t)>& row, int32_t pad_id,
                              int64_t limit, int64_t multiple) {
  const auto length = [&](const AnswerRow& r) {
    return std::min<int64_t>(limit, static_cast<int64_t>(r.prompt->size() + r.answer->size()));
  };
  int64_t T = 1;
  for (int64_t r = 0; r < rows; ++r) T = std::max(T, length(row(r)));
  if (multiple > 1) T = (T + multiple - 1) / multiple * multiple;
  HostBatch batch;
  batch.batch_size = rows;
  batch.rows_per_sample = 2;
  batch.seq_len = T;
  const auto cells = static_cast<size_t>(rows * T);
  batch.input_ids.assign(cells, pad_id);
  batch.labels.assign(cells, kIgnoreIndex);
  batch.attention_mask.assign(cells, 0);
  for (int64_t r = 0; r < rows; ++r) {
    const AnswerRow parts = row(r);
    const std::vector<int32_t>& prompt = *parts.prompt;
    const std::vector<int32_t>& answer = *parts.answer;
    const auto at = static_cast<size_t>(r * T);
    const auto n = static_cast<size_t>(length(parts));
    for (size_t t = 0; t < n; ++t) {
      batch.input_ids[at + t] = t < prompt.size() ? prompt[t] : answer[t - prompt.size()];
      batch.attention_mask[at + t] = 1;
      // Position t predicts token t + 1: a target where that token is the answer's.
      if (t + 1 < n && t + 1 >= prompt.size()) batch.labels[at + t] = answer[t + 1 - prompt.size()];
    }
  }
  return batch;
}

HostBatch collate_pairs(const std::vector<EncodedPair>& pairs, std::span<const uint64_t> ids, int32_t pad_id,
                        int64_t multiple) {
  const auto B = static_cast<int64_t>(ids.size());
  HostBatch batch = collate_answer_rows(
      2 * B,
      [&](int64_t r) {
        const EncodedPair& p = pairs.at(ids[static_cast<size_t>(r % B)]);
        return AnswerRow{&p.prompt, r < B ? &p.chosen : &p.rejected};
      },
      pad_id, std::numeric_limits<int64_t>::max(), multiple);
  batch.num_target_tokens = B;  // the pairs, over which the loss is averaged
  const bool margins =
      std::any_of(ids.begin(), ids.end(), [&](uint64_t id) { return pairs.at(id).margin.has_value(); });
  for (uint64_t id : ids) {
    if (margins) batch.margins.push_back(pairs.at(id).margin.value_or(0.0F));
  }
  if (B > 0 && pairs.at(ids[0]).reference_logps) {
    batch.reference_logps.resize(static_cast<size_t>(2 * B));
    for (int64_t i = 0; i < B; ++i) {
      const auto& r = pairs.at(ids[static_cast<size_t>(i)]).reference_logps;
      if (!r) throw std::logic_error("collate_pairs: a pair without the precomputed reference log-probs");
      batch.reference_logps[static_cast<size_t>(i)] = (*r)[0];
      batch.reference_logps[static_cast<size_t>(B + i)] = (*r)[1];
    }
  }
  batch.sample_ids.assign(ids.begin(), ids.end());
  return batch;
}

}  // namespace hftrain::data
