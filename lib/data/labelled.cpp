#include "data/labelled.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "data/csv_reader.h"
#include "data/text_checks.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/strings.h"
#include "util/json_depth.h"

namespace hftrain::data {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

std::string where(const fs::path& file, size_t line) {
  return "data file " + file.string() + ":" + std::to_string(line);
}

std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates,
                         const char* what) {
  const auto close = util::closest_matches(name, candidates);
  if (!close.empty())
    return "did you mean '" + close.front() + "'? (name the " + what + " in the data options)";
  return std::string("the ") + what + "s are: " + util::join(candidates, ", ");
}

// "1", "0", "17": the decimal text of a non-negative integer, nothing else ("01", "+1", "1.0" are
// names).
std::optional<int64_t> as_index(std::string_view label) {
  if (label.empty() || label.size() > 12 || (label.size() > 1 && label[0] == '0'))
    return std::nullopt;
  int64_t v = 0;
  for (char c : label) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// The columns an example needs, in order: text, text pair (when set), label.
std::vector<std::string> wanted(const LabelledOptions& o) {
  std::vector<std::string> out{o.text_column};
  if (!o.text_pair_column.empty()) out.push_back(o.text_pair_column);
  out.push_back(o.label_column);
  return out;
}

// Fills an example from its column values (same order as wanted()) and checks they are not empty.
LabelledExample make_example(const LabelledOptions& o, std::vector<std::string> values,
                             const fs::path& file, size_t line) {
  const auto names = wanted(o);
  for (size_t i = 0; i < values.size(); ++i) {
    if (util::trim(values[i]).empty()) {
      throw util::DataError(where(file, line) + ": '" + names[i] + "' is empty",
                            i + 1 == values.size() ? "every record needs a label"
                                                   : "remove the record or give it text");
    }
  }
  LabelledExample e;
  e.text = std::move(values[0]);
  if (values.size() == 3) e.text_pair = std::move(values[1]);
  e.label = std::move(values.back());
  e.origin = file.string() + ":" + std::to_string(line);
  return e;
}

void read_csv_examples(const fs::path& file, std::string_view bytes, char delimiter,
                       const LabelledOptions& o, std::vector<LabelledExample>& out) {
  std::vector<size_t> columns;  // the wanted columns' positions in the header
  read_csv(file, bytes, delimiter, [&](CsvRecord&& record) {
    if (columns.empty()) {
      for (const auto& name : wanted(o)) {
        auto it = std::find(record.fields.begin(), record.fields.end(), name);
        if (it == record.fields.end()) {
          throw util::DataError(
              where(file, record.line) + ": the header has no column '" + name + "'",
              did_you_mean(name, record.fields, "column") +
                  "; the first line of a CSV file names the columns");
        }
        columns.push_back(static_cast<size_t>(it - record.fields.begin()));
      }
      return;
    }
    std::vector<std::string> values;
    for (size_t c : columns) values.push_back(std::move(record.fields[c]));
    out.push_back(make_example(o, std::move(values), file, record.line));
  });
}

std::string json_value(const Json& obj, const std::string& name, bool label, const fs::path& file,
                       size_t line) {
  auto it = obj.find(name);
  if (it == obj.end()) {
    std::vector<std::string> keys;
    for (const auto& item : obj.items()) keys.push_back(item.key());
    throw util::DataError(where(file, line) + ": the record has no field '" + name + "'",
                          did_you_mean(name, keys, "field"));
  }
  if (it->is_string()) {
    check_text_field(file, line, it->get_ref<const std::string&>());
    return it->get<std::string>();
  }
  if (label && (it->is_number_integer() || it->is_boolean())) return it->dump();
  throw util::DataError(where(file, line) + ": field '" + name + "' is a " + it->type_name() +
                            ", not " + (label ? "a string, an integer or a boolean" : "a string"),
                        label ? "labels are names (\"positive\") or class ids (0, 1, ...)"
                              : "texts are JSON strings");
}

void read_jsonl_examples(const fs::path& file, std::string_view bytes, const LabelledOptions& o,
                         std::vector<LabelledExample>& out) {
  const auto names = wanted(o);
  const std::string shape = "{\"" + o.text_column + "\": \"...\", \"" + o.label_column + "\": ...}";
  for_each_json_record(file, bytes, shape, [&](const Json& obj, size_t line) {
    std::vector<std::string> values;
    for (size_t i = 0; i < names.size(); ++i)
      values.push_back(json_value(obj, names[i], i + 1 == names.size(), file, line));
    out.push_back(make_example(o, std::move(values), file, line));
  });
}

LabelledFormat resolve(LabelledFormat format, const fs::path& file) {
  if (format != LabelledFormat::kAuto) return format;
  const std::string ext = file.extension().string();
  if (ext == ".csv") return LabelledFormat::kCsv;
  if (ext == ".tsv") return LabelledFormat::kTsv;
  if (ext == ".jsonl" || ext == ".json") return LabelledFormat::kJsonl;
  throw util::DataError(
      "data file " + file.string() + ": cannot tell its format from the extension '" + ext + "'",
      "labelled data is .csv, .tsv or .jsonl (or name the format in the data options)");
}

}  // namespace

void for_each_json_record(const fs::path& file, std::string_view bytes, const std::string& shape,
                          const std::function<void(const Json&, size_t)>& record) {
  size_t line = 0;
  for (size_t pos = 0; pos < bytes.size();) {
    const size_t end = std::min(bytes.find('\n', pos), bytes.size());
    const std::string_view text = bytes.substr(pos, end - pos);
    pos = end + 1;
    ++line;
    if (util::trim(text).empty()) continue;
    const Json obj =
        util::parse_json<util::DataError>(text, file.string() + ":" + std::to_string(line) + " (the record's line)");
    if (!obj.is_object()) {
      throw util::DataError(where(file, line) + ": " + (obj.is_discarded() ? "malformed JSON" : "not a JSON object"),
                            "each line of a JSONL file is one JSON object: " + shape);
    }
    record(obj, line);
  }
}

std::vector<LabelledExample> read_labelled(const fs::path& file, const LabelledOptions& options) {
  const LabelledFormat format = resolve(options.format, file);
  const std::string bytes = util::read_file<util::DataError>(file, "data file", size_t{1} << 34);
  check_text_file(file, bytes);
  std::vector<LabelledExample> out;
  if (format == LabelledFormat::kJsonl) {
    read_jsonl_examples(file, bytes, options, out);
  } else {
    read_csv_examples(file, bytes, format == LabelledFormat::kTsv ? '\t' : ',', options, out);
  }
  if (out.empty()) {
    throw util::DataError(where(file, 1) + ": holds no labelled record",
                          "a header row alone (CSV) trains nothing");
  }
  return out;
}

std::optional<int64_t> LabelSet::id_of(std::string_view label) const {
  auto it = std::find(names.begin(), names.end(), label);
  if (it != names.end()) return it - names.begin();
  auto index = as_index(label);
  if (index && *index < static_cast<int64_t>(names.size())) return index;
  return std::nullopt;
}

LabelSet label_set_of(const std::vector<LabelledExample>& examples, const std::string& source) {
  std::set<std::string> distinct;
  for (const auto& e : examples) distinct.insert(e.label);
  if (distinct.size() < 2) {
    throw util::DataError(
        source + ": " +
            (distinct.empty() ? "has no examples"
                              : "every example has the label '" + *distinct.begin() + "'"),
        "classification needs examples of at least two classes");
  }
  std::set<int64_t> ids;
  for (const auto& label : distinct) {
    if (auto id = as_index(label)) ids.insert(*id);
  }
  LabelSet out;
  if (ids.size() !=
      distinct.size()) {  // names: sorted, so the ids do not depend on the order of the data
    out.names.assign(distinct.begin(), distinct.end());
    return out;
  }
  const int64_t k = *ids.rbegin() + 1;
  if (k != static_cast<int64_t>(ids.size())) {
    // Some ids below the largest never occur: name the first few, never listing up to a huge id
    // (a label of 2^31 would otherwise mean two billion classes).
    std::vector<std::string> gaps;
    int64_t next = 0;
    for (int64_t id : ids) {
      for (; next < id && gaps.size() < 5; ++next) gaps.push_back(std::to_string(next));
      if (gaps.size() >= 5) break;
      next = id + 1;
    }
    const int64_t missing = k - static_cast<int64_t>(ids.size());
    throw util::DataError(
        source + ": the labels are class ids up to " + std::to_string(k - 1) + " but " +
            (missing == 1 ? gaps.front() + " never occurs"
                          : std::to_string(missing) + " of 0.." + std::to_string(k - 1) + " never occur (" +
                                util::join(gaps, ", ") + (missing > 5 ? ", ..." : "") + ")"),
        "integer labels are the ids 0..K-1 of K classes; list the labels explicitly when a class "
        "has no training examples");
  }
  for (int64_t i = 0; i < k; ++i) out.names.push_back(std::to_string(i));
  return out;
}

std::vector<int64_t> label_ids(const std::vector<LabelledExample>& examples,
                               const LabelSet& labels) {
  std::unordered_map<std::string_view, int64_t>
      by_name;  // id_of's first rule, without its linear search
  for (size_t i = 0; i < labels.names.size(); ++i)
    by_name.emplace(labels.names[i], static_cast<int64_t>(i));
  std::vector<int64_t> out;
  out.reserve(examples.size());
  for (const auto& e : examples) {
    auto found = by_name.find(e.label);
    auto id = found != by_name.end() ? std::optional(found->second) : labels.id_of(e.label);
    if (!id) {
      std::vector<std::string> shown(
          labels.names.begin(),
          labels.names.begin() + static_cast<long>(std::min<size_t>(labels.names.size(), 12)));
      throw util::DataError(
          "data file " + e.origin + ": label '" + e.label + "' is not one of the " +
              std::to_string(labels.names.size()) + " labels (" + util::join(shown, ", ") +
              (labels.names.size() > shown.size() ? ", ..." : "") + ")",
          "the training data (or the model's id2label) defines the labels; fix the label or add "
          "examples of that class to the training data");
    }
    out.push_back(*id);
  }
  return out;
}

}  // namespace hftrain::data
