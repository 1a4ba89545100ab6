#include "train/evaluation.h"

#include <torch/torch.h>

#include "metrics/classification.h"
#include "metrics/entities.h"
#include "parallel/comm/monitor.h"
#include "train/step/precision.h"

namespace hftrain::train {

namespace {

// A token classifier's batch into `counts`: each row's labelled positions (the words' first pieces)
// are one sentence, its tags and the argmax predictions there.
void add_sentences(metrics::EntityCounts& counts, const torch::Tensor& labels, const torch::Tensor& logits) {
  const torch::Tensor l = labels.to(torch::kCPU, torch::kInt64).contiguous();
  const torch::Tensor p = logits.argmax(-1).to(torch::kCPU, torch::kInt64).contiguous();
  const int64_t rows = l.size(0), cols = l.size(1);
  const int64_t* lp = l.data_ptr<int64_t>();
  const int64_t* pp = p.data_ptr<int64_t>();
  std::vector<int64_t> truth, guess;
  for (int64_t r = 0; r < rows; ++r) {
    truth.clear();
    guess.clear();
    for (int64_t c = 0; c < cols; ++c) {
      if (lp[r * cols + c] == -100) continue;
      truth.push_back(lp[r * cols + c]);
      guess.push_back(pp[r * cols + c]);
    }
    counts.add_sentence(truth, guess);
  }
}

}  // namespace

EvalResult evaluate(TaskModel& model, data::DataLoader& loader, std::optional<int64_t> max_batches, int64_t k,
                    config::Precision precision, parallel::World& world, const torch::Device& device,
                    const std::vector<std::string>* tags, PipelineRunner* pipeline) {
  parallel::PhaseScope phase(world.monitor(), parallel::Phase::kEval);
  torch::NoGradGuard no_grad;
  model.module().eval();
  loader.seek(0);
  int64_t batches = static_cast<int64_t>(loader.batches_per_epoch());
  if (max_batches) batches = std::min(batches, *max_batches);
  auto loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(device));
  int64_t targets = 0;
  // Classification: the confusion counts (label x prediction), summed on the device.
  torch::Tensor confusion;
  if (k > 0 && !tags) confusion = torch::zeros({k * k}, torch::TensorOptions().dtype(torch::kInt64).device(device));
  std::optional<metrics::EntityCounts> entities;
  if (tags) entities.emplace(*tags);
  for (int64_t i = 0; i < batches; ++i) {
    data::Batch b = loader.next();
    torch::Tensor logits;
    if (pipeline) {
      loss_sum += pipeline->forward_only(b).to(torch::kFloat64);
      targets += b.num_target_tokens;
      continue;
    }
    {
      AutocastScope autocast(precision, device);
      loss_sum += model.loss_sum(b, 0.0, confusion.defined() || entities ? &logits : nullptr).to(torch::kFloat64);
    }
    targets += b.num_target_tokens;
    if (entities) add_sentences(*entities, b.labels, logits);
    if (confusion.defined()) {
      // Unlabelled rows add 0 (to cell 0..k-1): a fixed-size scatter, where masked_select and
      // bincount would size their results from the data and wait for the device.
      const auto labelled = b.labels.ne(-100);
      const auto cell = b.labels.clamp_min(0) * k + logits.argmax(-1);
      confusion.scatter_add_(0, cell.reshape({-1}), labelled.to(torch::kInt64).reshape({-1}));
    }
  }
  model.module().train();
  // The task's own figures (a preference objective's), as TRL names them in evaluation: eval_<name>.
  torch::Tensor task_sums = model.take_window_sums(/*evaluation=*/true);
  if (task_sums.defined() && world.dp_size() > 1) world.data_parallel().all_reduce(task_sums)->wait();
  if (pipeline) world.pipeline_group().all_reduce(loss_sum)->wait();  // the last stage's
  if (world.dp_size() > 1) {  // a tensor-parallel group's ranks evaluated the same batches
    world.data_parallel().all_reduce(loss_sum)->wait();
    if (confusion.defined()) world.data_parallel().all_reduce(confusion)->wait();
    if (entities) {  // every rank's counts, summed
      const auto mine = entities->counts();
      auto sum = torch::tensor(std::vector<int64_t>(mine.begin(), mine.end()), torch::kInt64).to(device);
      world.data_parallel().all_reduce(sum)->wait();
      const torch::Tensor all = sum.cpu();
      entities.emplace(*tags);
      entities->add_counts({all.data_ptr<int64_t>(), static_cast<size_t>(all.numel())});
    }
    targets = parallel::all_reduce_value(world.data_parallel(), targets, parallel::ReduceOp::kSum, device);
  }
  EvalResult result;
  if (confusion.defined()) {
    metrics::ConfusionMatrix m(k);
    const torch::Tensor counts = confusion.cpu().contiguous();
    m.add_counts({counts.data_ptr<int64_t>(), static_cast<size_t>(counts.numel())});
    const metrics::ClassificationMetrics c = metrics::classification_metrics(m);
    result.metrics = {{"eval_accuracy", c.accuracy}, {"eval_f1", c.f1}};
  }
  if (entities) {
    const metrics::EntityMetrics e = entities->metrics();
    result.metrics = {{"eval_precision", e.precision}, {"eval_recall", e.recall}, {"eval_f1", e.f1},
                      {"eval_accuracy", e.accuracy}};
  }
  for (auto& m : window_means(model, task_sums, "eval_")) result.metrics.push_back(std::move(m));
  result.targets = targets;
  result.loss = targets == 0 ? 0.0 : loss_sum.item<double>() / static_cast<double>(targets);
  return result;
}

}  // namespace hftrain::train
