// Entity-level metrics of sequence tagging against the seqeval library (1.2.2, its default lenient
// chunking): the entities of IOB2, IOB1, IOBES and odd tags, and precision / recall / F1 /
// accuracy over sentences, as seqeval computed them for the same tags.
#include <algorithm>

#include <catch2/catch.hpp>

#include "metrics/entities.h"
#include "util/error.h"

using namespace hftrain;
using metrics::Entity;

namespace {

std::vector<Entity> of(std::vector<std::string> tags) { return metrics::entities(tags); }

// Tags by name into EntityCounts over the union of their names.
metrics::EntityMetrics score(const std::vector<std::vector<std::string>>& truth,
                             const std::vector<std::vector<std::string>>& predicted) {
  std::vector<std::string> names;
  const auto id = [&](const std::string& t) {
    auto it = std::find(names.begin(), names.end(), t);
    if (it == names.end()) it = names.insert(names.end(), t);
    return static_cast<int64_t>(it - names.begin());
  };
  std::vector<std::vector<int64_t>> t_ids, p_ids;
  for (size_t s = 0; s < truth.size(); ++s) {
    t_ids.emplace_back(), p_ids.emplace_back();
    for (const auto& t : truth[s]) t_ids.back().push_back(id(t));
    for (const auto& p : predicted[s]) p_ids.back().push_back(id(p));
  }
  metrics::EntityCounts counts(names);
  for (size_t s = 0; s < truth.size(); ++s) counts.add_sentence(t_ids[s], p_ids[s]);
  return counts.metrics();
}

}  // namespace

TEST_CASE("entities: seqeval's chunks of IOB2, IOB1, IOBES and tags without a prefix", "[metrics]") {
  CHECK(of({"O", "B-PER", "I-PER", "O", "B-LOC"}) == std::vector<Entity>{{"PER", 1, 2}, {"LOC", 4, 4}});
  // IOB1: an I after O starts a chunk; a B splits two of one type.
  CHECK(of({"I-PER", "I-PER", "B-PER", "I-LOC", "O"}) ==
        std::vector<Entity>{{"PER", 0, 1}, {"PER", 2, 2}, {"LOC", 3, 3}});
  CHECK(of({"B-PER", "E-PER", "S-LOC", "O", "E-ORG"}) ==
        std::vector<Entity>{{"PER", 0, 1}, {"LOC", 2, 2}, {"ORG", 4, 4}});
  // A change of type ends a chunk and starts another.
  CHECK(of({"B-PER", "I-LOC", "I-LOC", "O", "I-MISC"}) ==
        std::vector<Entity>{{"PER", 0, 0}, {"LOC", 1, 2}, {"MISC", 4, 4}});
  // seqeval reads "PER" as prefix P, type "ER"; a bare "B" has type "_"; "." neither starts nor
  // continues a chunk.
  CHECK(of({"PER", "PER", "O", "LOC"}) == std::vector<Entity>{{"ER", 0, 1}, {"OC", 3, 3}});
  CHECK(of({"B", "I", "O", "I-X", ".", "I-X"}) == std::vector<Entity>{{"_", 0, 1}, {"X", 3, 3}, {"X", 5, 5}});
  CHECK(of({}).empty());
  CHECK(of({"O", "O"}).empty());
}

TEST_CASE("entities: precision, recall, F1 and accuracy over sentences, merged as ranks merge", "[metrics]") {
  // seqeval's documented example: 0.5, 0.5, 0.5, accuracy 0.8.
  const auto a = score({{"O", "O", "O", "B-MISC", "I-MISC", "I-MISC", "O"}, {"B-PER", "I-PER", "O"}},
                       {{"O", "O", "B-MISC", "I-MISC", "I-MISC", "I-MISC", "O"}, {"B-PER", "I-PER", "O"}});
  CHECK(a.precision == Approx(0.5));
  CHECK(a.recall == Approx(0.5));
  CHECK(a.f1 == Approx(0.5));
  CHECK(a.accuracy == Approx(0.8));
  CHECK((a.words == 10 && a.true_entities == 2 && a.predicted_entities == 2 && a.correct_entities == 1));
  // seqeval: precision 0.4, recall 2/3, F1 0.5, accuracy 4/7 (entities never span two sentences).
  const auto b = score({{"B-PER", "I-PER", "O", "B-LOC"}, {"I-ORG", "I-ORG", "O"}},
                       {{"B-PER", "B-PER", "O", "B-LOC"}, {"B-ORG", "I-ORG", "B-LOC"}});
  CHECK(b.precision == Approx(0.4));
  CHECK(b.recall == Approx(2.0 / 3.0));
  CHECK(b.f1 == Approx(0.5));
  CHECK(b.accuracy == Approx(4.0 / 7.0));
  // No entities anywhere: every ratio 0, accuracy still counted.
  const auto none = score({{"O", "O"}}, {{"O", "O"}});
  CHECK((none.precision == 0 && none.recall == 0 && none.f1 == 0 && none.accuracy == 1));

  // Counts from two "ranks" add up to the whole.
  metrics::EntityCounts r0({"O", "B-PER", "I-PER"}), r1({"O", "B-PER", "I-PER"}), all({"O", "B-PER", "I-PER"});
  const std::vector<int64_t> t0{1, 2, 0}, p0{1, 2, 0}, t1{0, 1, 0}, p1{1, 0, 0};
  r0.add_sentence(t0, p0);
  r1.add_sentence(t1, p1);
  all.add_sentence(t0, p0);
  all.add_sentence(t1, p1);
  const auto c1 = r1.counts();
  r0.add_counts(c1);
  CHECK(r0.counts() == all.counts());
  CHECK(all.metrics().precision == Approx(0.5));
  CHECK(all.metrics().recall == Approx(0.5));

  const std::vector<int64_t> two{0, 1}, one{0}, bad{0, 9};
  CHECK_THROWS_AS(all.add_sentence(two, one), util::UsageError);
  CHECK_THROWS_AS(all.add_sentence(two, bad), util::UsageError);
  CHECK_THROWS_AS(metrics::EntityCounts({"O", ""}), util::UsageError);
}
