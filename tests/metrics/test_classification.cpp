// Accuracy and F1 from a confusion matrix, against values computed by hand with scikit-learn's
// definitions (f1_score average="binary" on class 1, average="macro" over the classes present
// among labels or predictions, zero_division=0), and merging counts as ranks will.
#include <catch2/catch.hpp>

#include "metrics/classification.h"
#include "util/error.h"

using namespace hftrain;

namespace {

metrics::ConfusionMatrix matrix(int64_t k, const std::vector<int64_t>& labels,
                                const std::vector<int64_t>& predictions) {
  metrics::ConfusionMatrix m(k);
  m.add(labels, predictions);
  return m;
}

}  // namespace

TEST_CASE("classification metrics: binary accuracy and F1 of class 1", "[metrics]") {
  // labels 1 1 1 0 0 0 0 1; predictions 1 0 1 0 1 0 0 0: TP 2, FN 2, FP 1, TN 3.
  const auto m = matrix(2, {1, 1, 1, 0, 0, 0, 0, 1}, {1, 0, 1, 0, 1, 0, 0, 0});
  CHECK(m.count(1, 1) == 2);
  CHECK(m.count(1, 0) == 2);
  CHECK(m.count(0, 1) == 1);
  const auto r = metrics::classification_metrics(m);
  CHECK(r.binary);
  CHECK(r.examples == 8);
  CHECK(r.accuracy == Approx(5.0 / 8));
  CHECK(r.f1 == Approx(2.0 * 2 / (2 * 2 + 1 + 2)));  // 4/7: precision 2/3, recall 1/2
  // Nothing predicted or labelled positive: 0/0 is 0 (zero_division=0).
  CHECK(metrics::binary_f1(matrix(2, {0, 0}, {0, 0})) == 0.0);
  CHECK(metrics::binary_f1(matrix(2, {0, 0}, {1, 0})) == 0.0);
}

TEST_CASE("classification metrics: macro F1 over the classes that occur", "[metrics]") {
  // 4 classes, class 3 neither labelled nor predicted: left out of the mean, as sklearn does.
  // labels      0 0 0 1 1 2 2 2
  // predictions 0 1 0 1 2 2 2 0
  const auto m = matrix(4, {0, 0, 0, 1, 1, 2, 2, 2}, {0, 1, 0, 1, 2, 2, 2, 0});
  // class 0: TP 2, FP 1 (a 2), FN 1 -> 4/6; class 1: TP 1, FP 1, FN 1 -> 2/4; class 2: TP 2, FP 1,
  // FN 1 -> 4/6.
  const double want = (4.0 / 6 + 2.0 / 4 + 4.0 / 6) / 3;
  const auto r = metrics::classification_metrics(m);
  CHECK_FALSE(r.binary);
  CHECK(r.f1 == Approx(want));
  CHECK(r.accuracy == Approx(5.0 / 8));
  CHECK(metrics::f1_of_class(m, 3) == 0.0);
  // A class predicted but never labelled counts (F1 0) and lowers the mean.
  const auto predicted_only = matrix(3, {0, 1}, {0, 2});
  CHECK(metrics::macro_f1(predicted_only) == Approx((1.0 + 0.0 + 0.0) / 3));
  CHECK(metrics::macro_f1(metrics::ConfusionMatrix(3)) == 0.0);
  CHECK(metrics::accuracy(metrics::ConfusionMatrix(3)) == 0.0);
}

TEST_CASE("classification metrics: ignored labels, merging and counts buffers", "[metrics]") {
  auto a = matrix(3, {0, -100, 2}, {0, 1, 1});
  CHECK(a.total() == 2);  // -100 skipped
  const auto b = matrix(3, {1, 1}, {1, 0});
  auto merged = a;
  merged.merge(b);
  CHECK(merged.total() == 4);
  CHECK(merged.count(1, 1) == 1);
  metrics::ConfusionMatrix summed(3);
  summed.add_counts(a.counts());
  summed.add_counts(b.counts());
  CHECK(summed.counts() == merged.counts());
  CHECK(metrics::classification_metrics(summed).accuracy == Approx(0.5));

  CHECK_THROWS_AS(metrics::ConfusionMatrix(1), util::UsageError);
  CHECK_THROWS_AS(a.add(3, 0), util::UsageError);
  CHECK_THROWS_AS(a.merge(metrics::ConfusionMatrix(2)), util::UsageError);
  CHECK_THROWS_AS(a.add(std::vector<int64_t>{0}, std::vector<int64_t>{}), util::UsageError);
}
