#include "metrics/classification.h"

#include <string>

#include "util/error.h"

namespace hftrain::metrics {
namespace {

constexpr int64_t kNoLabel = -100;

void require(bool ok, const std::string& what) {
  if (!ok) throw util::UsageError("confusion matrix: " + what);
}

}  // namespace

ConfusionMatrix::ConfusionMatrix(int64_t num_labels) : num_labels_(num_labels) {
  require(num_labels >= 2,
          "classification needs at least 2 classes, not " + std::to_string(num_labels));
  counts_.assign(static_cast<size_t>(num_labels * num_labels), 0);
}

void ConfusionMatrix::add(int64_t label, int64_t prediction) {
  require(label >= 0 && label < num_labels_ && prediction >= 0 && prediction < num_labels_,
          "class " + std::to_string(label) + " predicted as " + std::to_string(prediction) +
              " is outside the " + std::to_string(num_labels_) + " classes");
  ++counts_[static_cast<size_t>(label * num_labels_ + prediction)];
}

void ConfusionMatrix::add(std::span<const int64_t> labels, std::span<const int64_t> predictions) {
  require(labels.size() == predictions.size(), std::to_string(labels.size()) + " labels but " +
                                                   std::to_string(predictions.size()) +
                                                   " predictions");
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] != kNoLabel) add(labels[i], predictions[i]);
  }
}

void ConfusionMatrix::merge(const ConfusionMatrix& other) {
  require(other.num_labels_ == num_labels_, "cannot merge " + std::to_string(other.num_labels_) +
                                                " classes into " + std::to_string(num_labels_));
  add_counts(other.counts_);
}

void ConfusionMatrix::add_counts(std::span<const int64_t> counts) {
  require(counts.size() == counts_.size(), "a buffer of " + std::to_string(counts.size()) +
                                               " counts for " + std::to_string(num_labels_) +
                                               " classes");
  for (size_t i = 0; i < counts.size(); ++i) counts_[i] += counts[i];
}

int64_t ConfusionMatrix::count(int64_t label, int64_t prediction) const {
  return counts_.at(static_cast<size_t>(label * num_labels_ + prediction));
}

int64_t ConfusionMatrix::total() const {
  int64_t n = 0;
  for (int64_t c : counts_) n += c;
  return n;
}

double accuracy(const ConfusionMatrix& m) {
  int64_t correct = 0;
  for (int64_t c = 0; c < m.num_labels(); ++c) correct += m.count(c, c);
  const int64_t n = m.total();
  return n == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(n);
}

double f1_of_class(const ConfusionMatrix& m, int64_t c) {
  int64_t fp = 0, fn = 0;
  for (int64_t other = 0; other < m.num_labels(); ++other) {
    if (other == c) continue;
    fp += m.count(other, c);
    fn += m.count(c, other);
  }
  const int64_t tp = m.count(c, c);
  const int64_t denominator = 2 * tp + fp + fn;
  return denominator == 0 ? 0.0 : 2.0 * static_cast<double>(tp) / static_cast<double>(denominator);
}

double binary_f1(const ConfusionMatrix& m) {
  return f1_of_class(m, 1);
}

double macro_f1(const ConfusionMatrix& m) {
  double sum = 0;
  int64_t classes = 0;
  for (int64_t c = 0; c < m.num_labels(); ++c) {
    int64_t seen = 0;  // as a label or as a prediction
    for (int64_t other = 0; other < m.num_labels(); ++other)
      seen += m.count(c, other) + m.count(other, c);
    if (seen == 0) continue;
    sum += f1_of_class(m, c);
    ++classes;
  }
  return classes == 0 ? 0.0 : sum / static_cast<double>(classes);
}

ClassificationMetrics classification_metrics(const ConfusionMatrix& m) {
  ClassificationMetrics out;
  out.examples = m.total();
  out.accuracy = accuracy(m);
  out.binary = m.num_labels() == 2;
  out.f1 = out.binary ? binary_f1(m) : macro_f1(m);
  return out;
}

}  // namespace hftrain::metrics
