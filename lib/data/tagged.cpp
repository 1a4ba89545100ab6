#include "data/tagged.h"

#include <nlohmann/json.hpp>

#include "data/text_checks.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/json_depth.h"
#include "util/strings.h"

namespace hftrain::data {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

std::string where(const fs::path& file, size_t line) {
  return "data file " + file.string() + ":" + std::to_string(line);
}

// A JSONL record's list field: words (strings) or tags (strings or integers, as their decimal text).
std::vector<std::string> list_field(const Json& obj, const std::string& name, bool tags, const fs::path& file,
                                    size_t line) {
  const auto it = obj.find(name);
  if (it == obj.end()) {
    std::vector<std::string> keys;
    for (const auto& item : obj.items()) keys.push_back(item.key());
    const auto close = util::closest_matches(name, keys);
    throw util::DataError(where(file, line) + ": the record has no field '" + name + "'",
                          close.empty() ? "its fields are: " + util::join(keys, ", ")
                                        : "did you mean '" + close.front() + "'? (data.text_field names the words, "
                                                                             "data.label_field the tags)");
  }
  if (!it->is_array()) {
    throw util::DataError(where(file, line) + ": field '" + name + "' is a " + it->type_name() + ", not a list",
                          tags ? "tags are a list, one per word: [\"B-PER\", \"I-PER\", \"O\"]"
                               : "words are a list of strings: [\"John\", \"Smith\", \"spoke\"]");
  }
  std::vector<std::string> out;
  for (const auto& v : *it) {
    if (v.is_string() && !util::trim(v.get_ref<const std::string&>()).empty()) {
      check_text_field(file, line, v.get_ref<const std::string&>());
      out.push_back(v.get<std::string>());
    } else if (tags && v.is_number_integer() && v.get<int64_t>() >= 0) {
      out.push_back(v.dump());
    } else {
      throw util::DataError(
          where(file, line) + ": field '" + name + "' holds " + v.dump().substr(0, 40) + ", not " +
              (tags ? "a tag name or a non-negative integer" : "a non-empty string"),
          tags ? "tags are names (\"B-PER\") or tag ids (0, 1, ...)" : "every word is a non-empty string");
    }
  }
  return out;
}

void read_jsonl(const fs::path& file, std::string_view bytes, const TaggedOptions& o,
                std::vector<TaggedSentence>& out) {
  const std::string shape = "{\"" + o.words_field + "\": [...], \"" + o.tags_field + "\": [...]} (one sentence)";
  for_each_json_record(file, bytes, shape, [&](const Json& obj, size_t line) {
    TaggedSentence s;
    s.words = list_field(obj, o.words_field, false, file, line);
    s.tags = list_field(obj, o.tags_field, true, file, line);
    s.origin = file.string() + ":" + std::to_string(line);
    if (s.words.size() != s.tags.size()) {
      throw util::DataError(where(file, line) + ": " + std::to_string(s.words.size()) + " words but " +
                                std::to_string(s.tags.size()) + " tags",
                            "give every word exactly one tag");
    }
    if (!s.words.empty()) out.push_back(std::move(s));
  });
}

// CoNLL columns: "word [columns ...] tag" per line (spaces or tabs), a blank line between
// sentences, -DOCSTART- lines (CoNLL-2003's document marks) skipped.
void read_conll(const fs::path& file, std::string_view bytes, std::vector<TaggedSentence>& out) {
  TaggedSentence s;
  size_t line = 0;
  const auto flush = [&] {
    if (!s.words.empty()) out.push_back(std::move(s));
    s = TaggedSentence{};
  };
  for (size_t pos = 0; pos < bytes.size();) {
    const size_t end = std::min(bytes.find('\n', pos), bytes.size());
    std::string_view text = bytes.substr(pos, end - pos);
    pos = end + 1;
    ++line;
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (util::trim(text).empty()) {
      flush();
      continue;
    }
    std::vector<std::string> columns;
    for (size_t i = 0; i < text.size();) {
      while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
      size_t j = i;
      while (j < text.size() && text[j] != ' ' && text[j] != '\t') ++j;
      if (j > i) columns.emplace_back(text.substr(i, j - i));
      i = j;
    }
    if (columns.front() == "-DOCSTART-") continue;
    if (columns.size() < 2) {
      throw util::DataError(where(file, line) + ": '" + std::string(text.substr(0, 40)) + "' has one column",
                            "a CoNLL line is a word and its tag (the last column), apart by spaces or tabs");
    }
    check_text_field(file, line, columns.front());
    if (s.words.empty()) s.origin = file.string() + ":" + std::to_string(line);
    s.words.push_back(columns.front());
    s.tags.push_back(columns.back());
  }
  flush();
}

TaggedFormat resolve(TaggedFormat format, const fs::path& file) {
  if (format != TaggedFormat::kAuto) return format;
  const std::string ext = file.extension().string();
  if (ext == ".jsonl" || ext == ".json") return TaggedFormat::kJsonl;
  if (ext == ".conll" || ext == ".bio" || ext == ".iob" || ext == ".txt") return TaggedFormat::kConll;
  throw util::DataError("data file " + file.string() + ": cannot tell its format from the extension '" + ext + "'",
                        "tagged data is .jsonl (lists of words and tags) or CoNLL columns (.conll, .bio, .iob, .txt)");
}

// Every tag as a labelled example, for labelled.h's label set rules and messages.
std::vector<LabelledExample> as_labels(const TaggedSentence& s) {
  std::vector<LabelledExample> out;
  for (const auto& tag : s.tags)
    out.push_back(LabelledExample{.text = "", .text_pair = "", .label = tag, .origin = s.origin});
  return out;
}

}  // namespace

std::vector<TaggedSentence> read_tagged(const fs::path& file, const TaggedOptions& options) {
  const TaggedFormat format = resolve(options.format, file);
  const std::string bytes = util::read_file<util::DataError>(file, "data file", size_t{1} << 34);
  check_text_file(file, bytes);
  std::vector<TaggedSentence> out;
  if (format == TaggedFormat::kJsonl) {
    read_jsonl(file, bytes, options, out);
  } else {
    read_conll(file, bytes, out);
  }
  if (out.empty())
    throw util::DataError(where(file, 1) + ": holds no tagged sentence", "a sentence needs words and tags");
  return out;
}

LabelSet tag_set_of(const std::vector<TaggedSentence>& sentences, const std::string& source) {
  std::vector<LabelledExample> all;
  for (const auto& s : sentences) {
    auto tags = as_labels(s);
    all.insert(all.end(), std::make_move_iterator(tags.begin()), std::make_move_iterator(tags.end()));
  }
  return label_set_of(all, source);
}

std::vector<std::vector<int64_t>> tag_ids(const std::vector<TaggedSentence>& sentences, const LabelSet& tags) {
  std::vector<std::vector<int64_t>> out;
  out.reserve(sentences.size());
  for (const auto& s : sentences) out.push_back(label_ids(as_labels(s), tags));
  return out;
}

}  // namespace hftrain::data
