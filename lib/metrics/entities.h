// Entity-level precision, recall and F1 of sequence tagging (named-entity recognition), as the
// seqeval library computes them by default (what Hugging Face `evaluate`'s "seqeval" and the
// token-classification examples report as overall_precision / recall / f1 / accuracy).
//
// A tag is a prefix letter and a type: "B-PER" is B and PER, "I-LOC" I and LOC, "O" outside
// (seqeval reads the first character as the prefix and what follows its first '-' as the type; a
// tag without one has type "_"). Chunks follow seqeval's lenient rules, which read IOB1, IOB2, IOE
// and IOBES alike: a chunk ends before an O, a B or S, after an E or S, or where the type changes;
// it starts at a B or S, at an I or E after O, E or S of a chunk that ended, or where the type
// changes. An entity is (type, first word, last word) within one sentence.
//
// Over the evaluated sentences: precision = correct / predicted entities, recall = correct / true
// entities, F1 = 2 P R / (P + R) (each 0 where its denominator is 0), accuracy = words tagged
// right / words. The counts merge across batches and ranks by summing.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace hftrain::metrics {

struct Entity {
  std::string type;
  int64_t first = 0, last = 0;  // word positions, inclusive
  bool operator==(const Entity&) const = default;
  auto operator<=>(const Entity&) const = default;
};

// The entities of one sentence's tags, in order.
std::vector<Entity> entities(std::span<const std::string> tags);

struct EntityMetrics {
  int64_t words = 0;
  int64_t true_entities = 0, predicted_entities = 0, correct_entities = 0;
  double precision = 0, recall = 0, f1 = 0, accuracy = 0;
};

class EntityCounts {
 public:
  // `tags`: the label names by id ("O", "B-PER", ...). Throws UsageError for an empty name.
  explicit EntityCounts(std::vector<std::string> tags);

  // One sentence: the true tag ids of its words and the predicted ones. Throws UsageError when the
  // lengths differ or an id is outside the tags.
  void add_sentence(std::span<const int64_t> labels, std::span<const int64_t> predictions);
  // The five counts (words, words right, true, predicted and correct entities) to all-reduce as one
  // buffer; add_counts adds such a buffer back.
  std::array<int64_t, 5> counts() const { return counts_; }
  void add_counts(std::span<const int64_t> counts);

  EntityMetrics metrics() const;

 private:
  std::vector<std::string> tags_;
  std::array<int64_t, 5> counts_{};
};

}  // namespace hftrain::metrics
