
#include "../torch_catch.h"  // first: see the file
#include <cmath>

#include "train/best_metric.h"
#include "train/callbacks.h"
#include "train/step/precision.h"
#include "train/step/step_math.h"

using namespace hftrain;

TEST_CASE("token loss sum ignores -100 and matches the mean times the count", "[train]") {
  torch::manual_seed(0);
  auto logits = torch::randn({2, 5, 7});
  auto labels = torch::randint(0, 7, {2, 5}, torch::kInt64);
  labels[0][4] = -100;
  labels[1][0] = -100;
  auto sum = train::token_loss_sum(logits, labels, 0.0);
  auto mean = torch::nn::functional::cross_entropy(logits.reshape({-1, 7}), labels.reshape({-1}));
  CHECK(sum.item<double>() == Approx(mean.item<double>() * 8).epsilon(1e-6));
  auto smoothed = train::token_loss_sum(logits, labels, 0.1);
  auto smoothed_mean =
      torch::nn::functional::cross_entropy(logits.reshape({-1, 7}), labels.reshape({-1}),
                                           torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(0.1));
  CHECK(smoothed.item<double>() == Approx(smoothed_mean.item<double>() * 8).epsilon(1e-6));
}

TEST_CASE("global-norm clipping equals torch's clip_grad_norm_", "[train]") {
  torch::manual_seed(1);
  std::vector<torch::Tensor> a = {torch::randn({3, 4}, torch::requires_grad()),
                                  torch::randn({5}, torch::requires_grad())};
  std::vector<torch::Tensor> b = {a[0].detach().clone().requires_grad_(), a[1].detach().clone().requires_grad_()};
  for (size_t i = 0; i < a.size(); ++i) {
    auto g = torch::randn(a[i].sizes()) * 3;
    a[i].mutable_grad() = g.clone();
    b[i].mutable_grad() = g.clone();
  }
  const double expected_norm = torch::nn::utils::clip_grad_norm_(b, 1.0);
  auto norm = train::clip_grad_norm(a, 1.0);
  CHECK(norm.item<double>() == Approx(expected_norm).epsilon(1e-6));
  for (size_t i = 0; i < a.size(); ++i) CHECK(torch::allclose(a[i].grad(), b[i].grad(), 1e-6, 1e-7));
  // An infinite limit only measures.
  auto before = a[0].grad().clone();
  train::clip_grad_norm(a, std::numeric_limits<double>::infinity());
  CHECK(torch::equal(before, a[0].grad()));
}

namespace {

// The scaler's whole cycle on one device: an overflow is found, skipped and backed off; clean
// steps unscale and, after growth_interval of them, grow the scale.
void check_scaler_cycle(const torch::Device& device, torch::ScalarType grad_dtype) {
  const auto on = torch::TensorOptions().device(device).dtype(grad_dtype);
  train::GradScaler scaler(true, 1024.0, /*growth_interval=*/2, device);
  auto p = torch::zeros({3}, on.requires_grad(true));
  auto q = torch::zeros({2}, on.requires_grad(true));
  p.mutable_grad() = torch::tensor({1.0f, std::numeric_limits<float>::infinity(), 2.0f}).to(on);
  q.mutable_grad() = torch::tensor({4.0f, 8.0f}).to(on);
  scaler.unscale({p, q});
  CHECK(scaler.found_inf());
  scaler.update();
  CHECK(scaler.current_scale() == 512.0);  // backed off
  p.mutable_grad() = torch::tensor({1.0f, std::nanf(""), 2.0f}).to(on);
  scaler.unscale({p, q});
  CHECK(scaler.found_inf());  // NaN counts too
  scaler.update();
  CHECK(scaler.current_scale() == 256.0);
  for (int i = 0; i < 2; ++i) {
    p.mutable_grad() = torch::tensor({256.0f, 512.0f, 0.0f}).to(on);
    q.mutable_grad() = torch::tensor({128.0f, -64.0f}).to(on);
    scaler.unscale({p, q});
    CHECK_FALSE(scaler.found_inf());
    CHECK(torch::equal(p.grad().cpu(), torch::tensor({1.0f, 2.0f, 0.0f}).to(grad_dtype)));  // unscaled
    CHECK(torch::equal(q.grad().cpu(), torch::tensor({0.5f, -0.25f}).to(grad_dtype)));
    scaler.update();
  }
  CHECK(scaler.current_scale() == 512.0);  // grew after two clean steps
  CHECK(scaler.scale(torch::ones({}, torch::TensorOptions().device(device))).item<double>() == 512.0);
  const auto state = scaler.state();
  CHECK(state.scale == 512.0);
  CHECK(state.growth_tracker == 0);
}

}  // namespace

TEST_CASE("fp16 loss scaler skips overflowed steps, backs off, and grows", "[train]") {
  check_scaler_cycle(torch::kCPU, torch::kFloat32);
}

TEST_CASE("fp16 loss scaler on CUDA with half-precision gradients", "[train][gpu]") {
  if (!torch::cuda::is_available()) {
    WARN("no CUDA device; skipped");
    return;
  }
  check_scaler_cycle(torch::Device(torch::kCUDA, 0), torch::kFloat16);
  check_scaler_cycle(torch::Device(torch::kCUDA, 0), torch::kFloat32);
}

TEST_CASE("early stopping counts evaluations without a large enough improvement", "[train]") {
  train::EarlyStopping stop(2, 0.01);
  train::TrainState s;
  s.step = 10;  // an evaluation at step 0 (trainer.eval_on_start) would not count
  stop.on_evaluate(s, 3.0);
  stop.on_evaluate(s, 2.5);
  stop.on_evaluate(s, 2.495);  // within the threshold: not an improvement
  CHECK_FALSE(s.should_stop);
  stop.on_evaluate(s, 2.6);
  CHECK(s.should_stop);
}

TEST_CASE("early stopping follows trainer.metric_for_best_model in its direction", "[train]") {
  config::TrainerConfig t;
  t.metric_for_best_model = "eval_accuracy";
  train::EarlyStopping stop(2, 0.01, train::BestMetric::of(t));
  train::TrainState s;
  s.step = 10;
  for (const double accuracy : {0.5, 0.7, 0.705}) {  // 0.705: not better by more than the threshold
    s.last_metric = accuracy;
    stop.on_evaluate(s, /*eval_loss=*/1.0);
  }
  CHECK_FALSE(s.should_stop);
  CHECK(s.early_stopping_best == 0.7);
  s.last_metric = 0.6;
  stop.on_evaluate(s, 1.0);
  CHECK(s.should_stop);
  // The evaluation at the start ranks nothing.
  train::TrainState start;
  start.last_metric = 0.1;
  stop.on_evaluate(start, 1.0);
  CHECK_FALSE(start.early_stopping_best);
}

TEST_CASE("the best metric: its figure, its direction by the Trainer's rule, and improvement", "[train]") {
  using Catch::Matchers::Contains;
  config::TrainerConfig t;
  t.metric_for_best_model = "eval_loss";
  CHECK_FALSE(train::BestMetric::of(t).greater);
  t.metric_for_best_model = "eval/books/loss";
  CHECK_FALSE(train::BestMetric::of(t).greater);
  t.metric_for_best_model = "eval_f1";
  const train::BestMetric f1 = train::BestMetric::of(t);
  CHECK(f1.greater);
  t.greater_is_better = false;
  CHECK_FALSE(train::BestMetric::of(t).greater);
  const std::vector<std::pair<std::string, double>> figures = {{"eval_accuracy", 0.75}, {"eval_f1", 0.5}};
  CHECK(f1.value(2.0, figures) == 0.5);
  t.metric_for_best_model = "eval_ppl";
  CHECK(train::BestMetric::of(t).value(std::log(3.0), figures) == Approx(3.0));
  config::TrainerConfig ppl;
  ppl.metric_for_best_model = "eval_ppl";
  CHECK_FALSE(train::BestMetric::of(ppl).greater);  // a perplexity is a loss: lower is better
  t.metric_for_best_model = "eval_bleu";
  CHECK_THROWS_WITH(train::BestMetric::of(t).value(2.0, figures),
                    Contains("trainer.metric_for_best_model=eval_bleu") && Contains("eval_accuracy, eval_f1"));
  CHECK(f1.improves(0.4, std::nullopt));
  CHECK(f1.improves(0.6, 0.5));
  CHECK_FALSE(f1.improves(0.55, 0.5, 0.1));
  CHECK_FALSE(f1.improves(std::nan(""), 0.5));
}
