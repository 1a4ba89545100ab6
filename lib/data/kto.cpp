#include "data/kto.h"

#include <algorithm>

#include "data/text_checks.h"
#include "util/error.h"
#include "util/strings.h"

namespace hftrain::data {
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

constexpr const char* kShape =
    R"({"prompt": "...", "completion": "...", "label": true}, or prompt and completion as lists of messages)";

[[noreturn]] void bad(const std::string& origin, const std::string& what, const std::string& hint = kShape) {
  throw util::DataError("data file " + origin + ": " + what, hint);
}

KtoRecord parse_unpaired(const Json& obj, const KtoFields& f, const fs::path& file, size_t line) {
  KtoRecord k;
  PreferenceRecord& r = k.record;
  r.origin = file.string() + ":" + std::to_string(line);
  std::vector<std::string> keys;
  for (const auto& item : obj.items()) keys.push_back(item.key());
  const auto field = [&](const std::string& name) -> const Json& {
    const auto it = obj.find(name);
    if (it == obj.end() || it->is_null()) {
      const auto close = util::closest_matches(name, keys);
      bad(r.origin, "the record has no field '" + name + "'",
          close.empty() ? "the fields are: " + util::join(keys, ", ")
                        : "did you mean '" + close.front() + "'? (name the field in data.*_field)");
    }
    return *it;
  };
  const Json& prompt = field(f.prompt);
  const Json& completion = field(f.completion);
  const Json& label = field(f.label);
  if (!label.is_boolean()) {
    bad(r.origin, "field '" + f.label + "' is " + label.dump() + ", not true or false",
        "true marks the completion desirable, false undesirable");
  }
  k.desirable = label.get<bool>();
  for (const auto& [name, value] : {std::pair{&f.prompt, &prompt}, {&f.completion, &completion}}) {
    if (!value->is_string() && !value->is_array()) {
      bad(r.origin, "field '" + *name + "' is a JSON " + std::string(value->type_name()) +
                        ", not a string or a list of messages");
    }
  }
  r.conversational = completion.is_array();
  if (prompt.is_array() != r.conversational) {
    bad(r.origin, "field '" + f.prompt + "' is " + (prompt.is_array() ? "a list of messages" : "a string") +
                      ", but field '" + f.completion + "' is " +
                      (r.conversational ? "a list of messages" : "a string"),
        "a record is all text or all messages");
  }
  if (r.conversational) {
    check_messages(prompt, r.origin, f.prompt, true);
    check_messages(completion, r.origin, f.completion, false);
    r.prompt_messages = prompt;
    r.chosen_messages = r.rejected_messages = completion;
  } else {
    r.prompt = prompt.get<std::string>();
    r.chosen = r.rejected = completion.get<std::string>();
    for (const std::string* text : {&r.prompt, &r.chosen}) check_text_field(file, line, *text);
    if (r.chosen.empty())
      bad(r.origin, "field '" + f.completion + "' is empty", "every completion needs text to score");
  }
  return k;
}

}  // namespace

std::vector<KtoRecord> read_kto(const fs::path& file, const KtoFields& fields) {
  std::vector<KtoRecord> out;
  read_json_objects(file, kShape, [&](const Json& obj, size_t line) {
    if (obj.contains(fields.paired.chosen) && obj.contains(fields.paired.rejected)) {
      // A preference pair: its chosen answer desirable, its rejected one not (TRL's unpairing).
      const PreferenceRecord pair = parse_preference(obj, fields.paired, file, line);
      for (const bool desirable : {true, false}) {
        KtoRecord k{pair, desirable};
        if (desirable) {
          k.record.rejected = k.record.chosen;
          k.record.rejected_messages = k.record.chosen_messages;
        } else {
          k.record.chosen = k.record.rejected;
          k.record.chosen_messages = k.record.rejected_messages;
        }
        out.push_back(std::move(k));
      }
      return;
    }
    out.push_back(parse_unpaired(obj, fields, file, line));
  });
  return out;
}

std::optional<KtoExample> encode_kto(const tokenizer::Tokenizer& tokenizer, const tokenizer::ChatTemplate* chat,
                                     const KtoRecord& record, const PreferenceLimits& limits) {
  std::optional<EncodedPair> pair = encode_pair(tokenizer, chat, record.record, limits);
  if (!pair) return std::nullopt;
  return KtoExample{std::move(pair->prompt), std::move(pair->chosen), record.desirable, pair->truncated};
}

HostBatch collate_kto(const std::vector<KtoExample>& examples, std::span<const uint64_t> ids, int32_t pad_id,
                      int64_t seq_len, int64_t multiple) {
  const auto B = static_cast<int64_t>(ids.size());
  const auto at = [&](int64_t i) -> const KtoExample& { return examples.at(ids[static_cast<size_t>(i)]); };
  // Row r's prompt and completion: the example's own, then (KL rows) the previous example's completion.
  HostBatch batch = collate_answer_rows(
      2 * B,
      [&](int64_t r) {
        const int64_t i = r % B;
        return AnswerRow{&at(i).prompt, &at(r < B ? i : (i + B - 1) % B).completion};
      },
      pad_id, seq_len, multiple);
  for (int64_t i = 0; i < B; ++i) batch.desirable.push_back(at(i).desirable ? 1 : 0);
  batch.num_target_tokens = B;
  batch.sample_ids.assign(ids.begin(), ids.end());
  return batch;
}

}  // namespace hftrain::data
