#include "metrics/entities.h"

#include <algorithm>
#include <iterator>

#include "util/error.h"

namespace hftrain::metrics {
namespace {

struct Tag {
  char prefix = 'O';
  std::string type = "_";
};

// seqeval's reading of a tag: its first character, and what follows the first '-' of the rest
// (all of the rest without one; "_" when that is empty).
Tag parse(const std::string& tag) {
  Tag t;
  t.prefix = tag.empty() ? 'O' : tag[0];
  const std::string rest = tag.empty() ? "" : tag.substr(1);
  const size_t dash = rest.find('-');
  t.type = dash == std::string::npos ? rest : rest.substr(dash + 1);
  if (t.type.empty()) t.type = "_";
  return t;
}

bool ends_chunk(const Tag& prev, const Tag& cur) {
  const char p = prev.prefix, c = cur.prefix;
  if (p == 'E' || p == 'S') return true;
  if ((p == 'B' || p == 'I') && (c == 'B' || c == 'S' || c == 'O')) return true;
  return p != 'O' && p != '.' && prev.type != cur.type;
}

bool starts_chunk(const Tag& prev, const Tag& cur) {
  const char p = prev.prefix, c = cur.prefix;
  if (c == 'B' || c == 'S') return true;
  if ((p == 'E' || p == 'S' || p == 'O') && (c == 'E' || c == 'I')) return true;
  return c != 'O' && c != '.' && prev.type != cur.type;
}

std::vector<Entity> chunks(std::span<const Tag> tags) {
  std::vector<Entity> out;
  Tag prev;  // "O", type "_"
  int64_t begin = 0;
  const Tag outside;
  for (size_t i = 0; i <= tags.size(); ++i) {  // one "O" past the end closes the last chunk
    const Tag& cur = i < tags.size() ? tags[i] : outside;
    const auto at = static_cast<int64_t>(i);
    if (ends_chunk(prev, cur)) out.push_back({prev.type, begin, at - 1});
    if (starts_chunk(prev, cur)) begin = at;
    prev = cur;
  }
  return out;
}

}  // namespace

std::vector<Entity> entities(std::span<const std::string> tags) {
  std::vector<Tag> parsed;
  parsed.reserve(tags.size());
  for (const auto& t : tags) parsed.push_back(parse(t));
  return chunks(parsed);
}

EntityCounts::EntityCounts(std::vector<std::string> tags) : tags_(std::move(tags)) {
  for (const auto& t : tags_) {
    if (t.empty()) throw util::UsageError("a tag (label name) is empty", "name every tag, e.g. O, B-PER, I-PER");
  }
}

void EntityCounts::add_sentence(std::span<const int64_t> labels, std::span<const int64_t> predictions) {
  if (labels.size() != predictions.size()) {
    throw util::UsageError("a sentence has " + std::to_string(labels.size()) + " tags but " +
                           std::to_string(predictions.size()) + " predictions");
  }
  const auto n = static_cast<int64_t>(tags_.size());
  std::vector<Tag> truth, guess;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= n || predictions[i] < 0 || predictions[i] >= n) {
      throw util::UsageError("tag id " + std::to_string(labels[i] < 0 || labels[i] >= n ? labels[i] : predictions[i]) +
                             " is outside the " + std::to_string(n) + " tags");
    }
    truth.push_back(parse(tags_[static_cast<size_t>(labels[i])]));
    guess.push_back(parse(tags_[static_cast<size_t>(predictions[i])]));
    counts_[1] += labels[i] == predictions[i];
  }
  counts_[0] += static_cast<int64_t>(labels.size());
  auto want = chunks(truth), got = chunks(guess);
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  std::vector<Entity> both;
  std::set_intersection(want.begin(), want.end(), got.begin(), got.end(), std::back_inserter(both));
  counts_[2] += static_cast<int64_t>(want.size());
  counts_[3] += static_cast<int64_t>(got.size());
  counts_[4] += static_cast<int64_t>(both.size());
}

void EntityCounts::add_counts(std::span<const int64_t> counts) {
  if (counts.size() != counts_.size()) {
    throw util::UsageError("entity counts of " + std::to_string(counts.size()) + " values, expected 5");
  }
  for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += counts[i];
}

EntityMetrics EntityCounts::metrics() const {
  EntityMetrics m;
  m.words = counts_[0];
  m.true_entities = counts_[2];
  m.predicted_entities = counts_[3];
  m.correct_entities = counts_[4];
  const auto ratio = [](int64_t a, int64_t b) { return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : 0.0; };
  m.accuracy = ratio(counts_[1], counts_[0]);
  m.precision = ratio(m.correct_entities, m.predicted_entities);
  m.recall = ratio(m.correct_entities, m.true_entities);
  m.f1 = m.precision + m.recall > 0 ? 2 * m.precision * m.recall / (m.precision + m.recall) : 0.0;
  return m;
}

}  // namespace hftrain::metrics
