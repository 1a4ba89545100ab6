// Labelled text for sequence classification: one text (or a text pair, as GLUE's
// sentence1/sentence2) and a label per record, from CSV/TSV with a header row (csv_reader.h) or
// JSON Lines. Labels are names ("positive") or integers; the label set maps them to the class ids
// a classifier predicts (config.json's id2label).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace hftrain::data {

enum class LabelledFormat {
  kAuto,   // by extension: .csv -> kCsv, .tsv -> kTsv, .jsonl / .json -> kJsonl
  kCsv,    // comma-separated, RFC 4180 quoting, header row required
  kTsv,    // the same with tabs
  kJsonl,  // one JSON object per line
};

struct LabelledOptions {
  LabelledFormat format = LabelledFormat::kAuto;
  std::string text_column = "text";  // the (first) text: a CSV column, a JSONL field
  std::string text_pair_column;      // the second text of a pair ("sentence2"); empty: single texts
  std::string label_column = "label";
};

struct LabelledExample {
  std::string text;
  std::string text_pair;  // empty for single texts
  std::string label;   // as written: "positive", "1"; a JSONL integer or boolean as its JSON text
  std::string origin;  // "file:line", for messages
};

// Reads every record of `file`. Throws DataError "data file <file>:<line>: ..." naming the column
// or field, with a hint, for: an empty file, binary data or invalid UTF-8; malformed CSV quoting or
// a record with a different number of fields than the header (csv_reader.h); malformed JSON or a
// line that is not an object; a missing column or field (with the header's columns or the line's
// keys, and the closest one); an empty text or label; a text that is not a string, a label that is
// not a string, integer or boolean; a file without records. An unknown format (extension) is a
// DataError naming the formats.
std::vector<LabelledExample> read_labelled(const std::filesystem::path& file,
                                           const LabelledOptions& options);

// Calls `record(object, line)` for each non-blank line of a JSON Lines file's `bytes`, in order.
// Throws DataError "data file <file>:<line>: ..." for malformed JSON or a line that is not an
// object, the hint showing `shape` (one record, e.g. {"text": "...", "label": ...}).
void for_each_json_record(const std::filesystem::path& file, std::string_view bytes, const std::string& shape,
                          const std::function<void(const nlohmann::json&, size_t)>& record);

// The classes of a task, by id: names[id] is config.json's id2label[id].
struct LabelSet {
  std::vector<std::string> names;

  // The id of a label: the name's index; else, for a label that is a non-negative integer
  // ("1") below names.size(), the integer itself (so data labelled 0/1 fits a classifier whose
  // labels are named "negative"/"positive"). nullopt when neither.
  std::optional<int64_t> id_of(std::string_view label) const;
};

// The label set the training examples define, the same for every order of the examples:
//  - all labels non-negative integers: they are the ids, K = the largest + 1, names "0".."K-1";
//    every id below K must occur (a gap is more often a mistake than a class without examples);
//  - otherwise the distinct labels in byte order ("neg" < "pos").
// Throws DataError naming `source` (the training file) for no examples, a single class (nothing to
// learn), or a gap in integer labels (which ids are missing; hint: list the labels explicitly).
LabelSet label_set_of(const std::vector<LabelledExample>& examples, const std::string& source);

// Each example's class id under `labels`. Throws DataError "<origin>: label '<x>' is not one of
// the K labels (...)" for the first label it does not know (an evaluation file with a class the
// training data lacks, a typo).
std::vector<int64_t> label_ids(const std::vector<LabelledExample>& examples,
                               const LabelSet& labels);

}  // namespace hftrain::data
