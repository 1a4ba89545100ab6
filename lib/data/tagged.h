// Tagged sentences for token classification (named-entity recognition and other tagging): words
// with one tag each, from JSON Lines (a list of words and a list of tags per record, as Hugging
// Face datasets' conll2003 holds them: {"tokens": [...], "ner_tags": [...]}) or CoNLL columns (one
// word per line, its tag in the last column, sentences apart by a blank line, -DOCSTART- lines
// skipped). Tags are names ("B-PER") or integers; label_set_of / label_ids (labelled.h) map them to
// the classifier's ids.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "data/labelled.h"

namespace hftrain::data {

enum class TaggedFormat {
  kAuto,   // by extension: .jsonl / .json JSON Lines; .conll, .bio, .iob, .txt CoNLL columns
  kJsonl,
  kConll,
};

struct TaggedOptions {
  TaggedFormat format = TaggedFormat::kAuto;
  std::string words_field = "tokens";  // JSONL: the list of words
  std::string tags_field = "ner_tags"; // JSONL: the list of tags, one per word
};

struct TaggedSentence {
  std::vector<std::string> words;
  std::vector<std::string> tags;  // as written: "B-PER", or an integer tag's decimal text
  std::string origin;             // "file:line", for messages
};

// Reads every sentence of `file`. Throws DataError "data file <file>:<line>: ..." naming the field
// with a hint for: an empty or binary file, invalid UTF-8; malformed JSON or a line that is not an
// object; a missing field (with the closest one); words or tags that are not lists, of different
// lengths, or holding an empty word, a word that is not a string, a tag that is not a string or
// an integer; a CoNLL line with one column only; a file without sentences.
std::vector<TaggedSentence> read_tagged(const std::filesystem::path& file, const TaggedOptions& options);

// The tag set of `sentences` (label_set_of's rules over every tag: names sorted, or integer ids
// 0..K-1 without gaps). Throws DataError naming `source` as label_set_of does.
LabelSet tag_set_of(const std::vector<TaggedSentence>& sentences, const std::string& source);

// Each sentence's tag ids under `tags`. Throws DataError naming the sentence's origin for a tag
// the set lacks.
std::vector<std::vector<int64_t>> tag_ids(const std::vector<TaggedSentence>& sentences, const LabelSet& tags);

}  // namespace hftrain::data
