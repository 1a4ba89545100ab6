// Evaluation metrics of single-label classification, as scikit-learn's accuracy_score and
// f1_score compute them (what Hugging Face `evaluate` reports), from a confusion matrix that is
// accumulated batch by batch and merged across ranks by summing its counts.
//
// Definitions, per class c: TP = examples of c predicted c, FP = others predicted c, FN = examples
// of c predicted otherwise; F1(c) = 2 TP / (2 TP + FP + FN), and 0 when that is 0/0 (sklearn's
// zero_division=0, its default "warn" without the warning).
//  - accuracy = correct / examples (for single-label data also micro-averaged F1, so not repeated);
//  - two classes: binary F1, F1 of the positive class 1 (f1_score(average="binary", pos_label=1));
//  - more classes: macro F1, the unweighted mean of F1(c) over the classes that occur among the
//    labels or the predictions (f1_score(average="macro") with labels=None: a class neither present
//    nor predicted in the evaluated data is left out, not counted as 0).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace hftrain::metrics {

class ConfusionMatrix {
 public:
  // Throws UsageError for fewer than 2 classes.
  explicit ConfusionMatrix(int64_t num_labels);

  // One example of class `label` predicted as `prediction`. Throws UsageError for a class outside
  // [0, num_labels).
  void add(int64_t label, int64_t prediction);
  // A batch: labels[i] predicted as predictions[i]; labels equal to -100 (no label, PyTorch's
  // ignore_index) are skipped. Throws UsageError when the lengths differ.
  void add(std::span<const int64_t> labels, std::span<const int64_t> predictions);
  // Adds another matrix's counts (another rank's, another shard's). Throws UsageError when the
  // class counts differ.
  void merge(const ConfusionMatrix& other);
  // The counts, row-major (label, prediction): num_labels^2 values to all-reduce as one buffer;
  // add_counts adds such a buffer back. Throws UsageError for a buffer of another size.
  const std::vector<int64_t>& counts() const { return counts_; }
  void add_counts(std::span<const int64_t> counts);

  int64_t num_labels() const { return num_labels_; }
  int64_t count(int64_t label, int64_t prediction) const;
  int64_t total() const;

 private:
  int64_t num_labels_;
  std::vector<int64_t> counts_;
};

struct ClassificationMetrics {
  int64_t examples = 0;
  double accuracy = 0;  // 0 without examples
  double f1 = 0;        // binary F1 (2 classes) or macro F1 (more)
  bool binary = false;  // which F1 it is
};

ClassificationMetrics classification_metrics(const ConfusionMatrix& m);

// The parts on their own.
double accuracy(const ConfusionMatrix& m);
double f1_of_class(const ConfusionMatrix& m, int64_t c);  // F1(c) as defined above
double binary_f1(const ConfusionMatrix& m);               // F1(1)
double macro_f1(const ConfusionMatrix& m);  // over present or predicted classes; 0 if none

}  // namespace hftrain::metrics
