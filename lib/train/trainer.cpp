#include "train/trainer.h"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <thread>

#include <torch/torch.h>

#include "metrics/classification.h"
#include "metrics/format.h"
#include "metrics/memory.h"
#include "metrics/mfu.h"
#include "model/hf_config.h"
#include "model/hf_weights.h"
#include "model/saved_model.h"
#include "optim/lr_schedule.h"
#include "train/baseline.h"
#include "train/metrics_callback.h"
#include "train/model_from.h"
#include "train/precision.h"
#include "train/step_math.h"
#include "train/wiring.h"
#include "dist/memory_plan.h"
#include "dist/monitor.h"
#include "launch/launch_env.h"
#include "util/env.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/log.h"
#ifdef HFTRAIN_HAVE_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace hftrain::train {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string label_list(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 20; ++i) out += (i ? ", " : "") + std::to_string(i) + " " + names[i];
  return names.size() > 20 ? out + ", ..." : out;
}

// Peak memory for the metrics: the CUDA caching allocator's peak on a GPU, host peak RSS on the CPU.
std::optional<double> peak_memory_mib(const torch::Device& device) {
#ifdef HFTRAIN_HAVE_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    const auto& allocated = stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
    return static_cast<double>(allocated.peak) / (1024.0 * 1024.0);
  }
#endif
  static_cast<void>(device);
  return metrics::host_peak_rss_mib();
}

// MFU is reported on GPU runs only (PaLM convention; the metrics stage looks the peak up by name).
std::optional<metrics::MfuOptions> mfu_options(const torch::Device& device, const TaskModel& model,
                                               const config::Config& config) {
#ifdef HFTRAIN_HAVE_CUDA
  if (device.is_cuda()) {
    metrics::MfuOptions o;
    o.model = model.shape(config.data.seq_len);
    o.device_name = at::cuda::getDeviceProperties(device.index())->name;
    switch (config.trainer.precision) {
      case config::Precision::kBf16: o.precision = metrics::PeakPrecision::kBf16; break;
      case config::Precision::kFp16: o.precision = metrics::PeakPrecision::kFp16; break;
      case config::Precision::kFp32:
        o.precision = config.trainer.tf32 ? metrics::PeakPrecision::kTf32 : metrics::PeakPrecision::kFp32;
        break;
    }
    return o;
  }
#endif
  static_cast<void>(device), static_cast<void>(model), static_cast<void>(config);
  return std::nullopt;
}

}  // namespace

Trainer::Trainer(const config::Config& config, std::filesystem::path run_dir, const std::atomic<int>* stop_signal,
                 const std::optional<std::filesystem::path>& resume_from, dist::World* world)
    : config_(config),
      run_dir_(std::move(run_dir)),
      stop_signal_(stop_signal),
      own_world_(world ? nullptr : dist::World::create(launch::LaunchEnv{}, config.distributed, torch::kCPU)),
      world_(world ? world : own_world_.get()),
      device_(pick_device(config, world_->local_rank())),
      scaler_(config.trainer.precision == config::Precision::kFp16, config.trainer.fp16_init_scale,
              config.trainer.fp16_growth_interval, device_) {
  const auto& t = config_.trainer;
  if (t.precision == config::Precision::kFp16 && !device_.is_cuda()) {
    throw util::ConfigError("trainer.precision=fp16 needs a CUDA device (dynamic loss scaling runs there)",
                            "use trainer.precision=bf16 on the CPU");
  }
  torch::manual_seed(static_cast<uint64_t>(config_.run.seed));
  if (device_.is_cuda()) {
    at::globalContext().setAllowTF32CuBLAS(t.tf32);
    at::globalContext().setAllowTF32CuDNN(t.tf32);
  }
  tokenizer_ = data::make_tokenizer(tokenizer_options(config_));
  if (tokenizer_->vocab_size() > config_.model.vocab_size) {
    throw util::ConfigError("model.vocab_size (" + std::to_string(config_.model.vocab_size) +
                                ") is smaller than the tokenizer's vocabulary (" +
                                std::to_string(tokenizer_->vocab_size()) + ")",
                            "set model.vocab_size=" + std::to_string(tokenizer_->vocab_size()) + " or more");
  }
  // A BERT encoder classifies sequences: its labels come from the model directory's classifier
  // (named ones) or from the training data, and fix the classifier's size.
  const bool classify = config_.model.arch == config::ModelArch::kBert;
  const bool from_model_dir = config_.model.from && !resume_from;
  std::optional<ModelSource> source;
  if (from_model_dir) source = read_model_source(*config_.model.from);
  if (classify && resume_from) source = read_model_source(*resume_from);
  std::optional<model::BertSpec> bert;
  if (classify) bert = bert_spec(config_, source);
  {
    // Rank 0 tokenizes into the token cache first; the other ranks then map it.
    dist::PhaseScope phase(world_->monitor(), dist::Phase::kData);
    const bool many = world_->size() > 1;
    if (many && !world_->is_main()) world_->comm().barrier();
    const data::DataOptions options = data_options(config_, world_->rank(), world_->size());
    if (classify) {
      loaders_ = data::make_classification_loaders(classification_options(config_, source), options.loader,
                                                   *tokenizer_, device_);
    } else {
      loaders_ = data::make_loaders(options, *tokenizer_, device_);
    }
    if (many && world_->is_main()) world_->comm().barrier();
  }
  if (t.eval_every > 0 && !loaders_.validation) {
    throw util::DataError("trainer.eval_every is set but the validation split is empty",
                          "name data.validation sources or a data.validation_fraction large enough to hold a document");
  }
  if (classify) {
    bert->num_labels = static_cast<int64_t>(loaders_.labels.names.size());
    model_ = make_sequence_classifier(*bert, loaders_.labels.names);
    util::log::info("sequence classification over " + std::to_string(bert->num_labels) + " labels: " +
                    label_list(loaders_.labels.names));
  } else {
    model_ = make_causal_lm(model::ModelSpec::from_config(config_.model));
  }
  if (from_model_dir) model_->load(*config_.model.from, "model.from");
  model_->set_activation_checkpointing(config_.model.activation_checkpointing);
  model_->module().to(device_);
  {
    dist::PhaseScope phase(world_->monitor(), dist::Phase::kStartup);
    strategy_ = dist::ShardingStrategy::create(*world_, config_, model_->parameters_by_name(),
                                               model_->parameter_units());
    model_->set_unit_hooks(strategy_->unit_hooks());
  }
  // Every rank initialised the same weights from the same seed; from here on (dropout) each
  // rank draws its own numbers.
  if (world_->size() > 1) torch::manual_seed(static_cast<uint64_t>(config_.run.seed) + 7919u * world_->rank());
  total_steps_ = plan_total_steps();
  state_.total_steps = total_steps_;
  if (config_.scheduler.name == config::SchedulerName::kReduceLrOnPlateau) {
    plateau_.emplace(config_.scheduler.plateau, config_.optimizer.lr);
  }
  window_loss_ = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat32).device(device_));
}

Trainer::~Trainer() {
  if (model_) model_->set_unit_hooks(nullptr);
}

TaskModel& Trainer::model() { return *model_; }

void Trainer::start_from(const std::string& path, const std::string& what) { model_->load(path, what); }

int64_t Trainer::plan_total_steps() const {
  const auto& t = config_.trainer;
  const int64_t micro = t.grad_accum_steps;
  int64_t total = std::numeric_limits<int64_t>::max();
  if (t.max_steps) total = std::min(total, *t.max_steps);
  if (t.max_epochs) {
    total = std::min(total, *t.max_epochs * ceil_div(static_cast<int64_t>(loaders_.train->batches_per_epoch()), micro));
  }
  if (t.max_tokens) {
    const int64_t per_step = t.micro_batch_size * config_.data.seq_len * micro * world_->size();
    total = std::min(total, ceil_div(*t.max_tokens, per_step));
  }
  return std::max<int64_t>(total, 1);
}

double Trainer::evaluate() {
  dist::PhaseScope phase(world_->monitor(), dist::Phase::kEval);
  torch::NoGradGuard no_grad;
  model_->module().eval();
  auto& loader = *loaders_.validation;
  loader.seek(0);
  int64_t batches = static_cast<int64_t>(loader.batches_per_epoch());
  if (config_.trainer.eval_batches) batches = std::min(batches, *config_.trainer.eval_batches);
  auto loss_sum = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(device_));
  int64_t targets = 0;
  // Classification: the confusion counts (label x prediction), summed on the device.
  const auto k = static_cast<int64_t>(loaders_.labels.names.size());
  torch::Tensor confusion;
  if (!model_->causal_lm()) confusion = torch::zeros({k * k}, torch::TensorOptions().dtype(torch::kInt64).device(device_));
  for (int64_t i = 0; i < batches; ++i) {
    data::Batch b = loader.next();
    torch::Tensor logits;
    {
      AutocastScope autocast(config_.trainer.precision, device_);
      loss_sum += model_->loss_sum(b, 0.0, &logits).to(torch::kFloat64);
    }
    targets += b.num_target_tokens;
    if (confusion.defined()) {
      // Unlabelled rows add 0 (to cell 0..k-1): a fixed-size scatter, where masked_select and
      // bincount would size their results from the data and wait for the device.
      const auto labelled = b.labels.ne(-100);
      const auto cell = b.labels.clamp_min(0) * k + logits.argmax(-1);
      confusion.scatter_add_(0, cell.reshape({-1}), labelled.to(torch::kInt64).reshape({-1}));
    }
  }
  model_->module().train();
  if (world_->size() > 1) {
    world_->comm().all_reduce(loss_sum)->wait();
    if (confusion.defined()) world_->comm().all_reduce(confusion)->wait();
    targets = reduce_over_ranks(targets, dist::ReduceOp::kSum);
  }
  state_.last_eval_metrics.clear();
  if (confusion.defined()) {
    metrics::ConfusionMatrix m(k);
    const torch::Tensor counts = confusion.cpu().contiguous();
    m.add_counts({counts.data_ptr<int64_t>(), static_cast<size_t>(counts.numel())});
    const metrics::ClassificationMetrics c = metrics::classification_metrics(m);
    state_.last_eval_metrics = {{"eval_accuracy", c.accuracy}, {"eval_f1", c.f1}};
  }
  return targets == 0 ? 0.0 : loss_sum.item<double>() / static_cast<double>(targets);
}

int64_t Trainer::reduce_over_ranks(int64_t value, dist::ReduceOp op) {
  if (world_->size() == 1) return value;
  auto t = torch::full({1}, value, torch::TensorOptions().dtype(torch::kInt64).device(device_));
  world_->comm().all_reduce(t, op)->wait();
  return t.item<int64_t>();
}

void Trainer::save_model(const std::filesystem::path& dir) {
  {
    dist::PhaseScope phase(world_->monitor(), dist::Phase::kCheckpoint);
    dist::WholeParameters whole(*strategy_, dist::WholeParameters::Access::kSave, world_->is_main());
    if (world_->is_main()) model_->save_dir(dir, tokenizer_options(config_).kind, *tokenizer_);
  }
  if (world_->is_main()) {
    for (auto& cb : callbacks_) cb->on_save(state_, dir);
  }
}

void Trainer::report_memory() {
  const dist::MemoryReport m = strategy_->memory();
  int64_t psi = 0;
  for (const auto& [name, p] : model_->parameters_by_name()) psi += p.numel();
  const config::Strategy s = strategy_->name() == "single" ? config::Strategy::kDdp : config_.distributed.strategy;
  // hybrid shards inside a node: its N is the node's ranks.
  const int n = s == config::Strategy::kHybrid ? world_->env().local_world_size : world_->size();
  const dist::MemoryEstimate e =
      dist::estimate_memory(s, psi, n, config_.optimizer, config_.distributed.bucket_size, model_->unit_sizes());
  auto part = [](const char* what, int64_t have, double formula) {
    return std::string(what) + " " + std::to_string(have) + " B (" + dist::format_bytes(static_cast<double>(have)) +
           "; formula " + std::to_string(static_cast<int64_t>(formula)) + " B)";
  };
  util::log::info("memory on rank " + std::to_string(world_->rank()) + " (" + strategy_->name() + ", " +
                  std::to_string(world_->size()) + " ranks, Ψ = " + std::to_string(psi) + ", per rank " + e.formula +
                  "): " + part("parameters", m.parameters, e.parameters) + ", " +
                  part("gradients", m.gradients, e.gradients) + ", " +
                  part("optimizer state", m.optimizer_state, e.optimizer_state) + ", buffers " +
                  std::to_string(m.buffers) + " B (" + dist::format_bytes(static_cast<double>(m.buffers)) + ")" +
                  (m.host > 0 ? "; of these in CPU memory (distributed.cpu_offload) " + std::to_string(m.host) + " B" : ""));
}

// Test hook for the distributed end-to-end tests: HFTRAIN_TEST_FAULT=<rank>:<step>:kill|stall
// makes that rank SIGKILL itself, or stop answering, after that step.
void Trainer::inject_test_fault() {
  static const std::optional<std::string> spec = util::Environment::process().get("HFTRAIN_TEST_FAULT");
  if (!spec) return;
  int rank = -1;
  long long step = -1;
  char what[16] = {};
  if (std::sscanf(spec->c_str(), "%d:%lld:%15s", &rank, &step, what) != 3) return;
  if (rank != world_->rank() || step != state_.step) return;
  if (std::string(what) == "kill") std::raise(SIGKILL);
  if (std::string(what) == "stall") {
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }
}

void Trainer::notify(const std::string& line) {
  for (auto& cb : callbacks_) cb->on_message(state_, line);
}

std::optional<double> Trainer::train_step(double lr_factor) {
  const auto& t = config_.trainer;
  dist::PhaseScope phase(world_->monitor(), dist::Phase::kTrain);
  optimizer().set_lr_factor(lr_factor);
  // All micro-batches of the step first: their total target count normalises each one's loss.
  std::vector<data::Batch> micro;
  int64_t step_targets = 0;
  for (int64_t m = 0; m < t.grad_accum_steps; ++m) {
    micro.push_back(loaders_.train->next());
    step_targets += micro.back().num_target_tokens;
    // Every rank's micro-batch has this shape (exactly so with packing; with padding to the
    // longest, approximately).
    state_.tokens_seen += micro.back().input_ids.numel() * world_->size();
  }
  // The loss is divided by the step's target tokens over ALL ranks, so the summed gradients equal
  // one process's over the same global batch. The count is all-reduced on the device: no sync.
  const double denom = static_cast<double>(std::max<int64_t>(1, step_targets));
  torch::Tensor global_denom;
  if (world_->size() > 1) {
    auto count = torch::full({1}, step_targets, torch::TensorOptions().dtype(torch::kInt64).device(device_));
    world_->comm().all_reduce(count)->wait();
    global_denom = count.clamp_min(1).to(torch::kFloat32).reshape({});
  }
  for (size_t m = 0; m < micro.size(); ++m) {
    auto& b = micro[m];
    torch::Tensor loss_sum;
    {
      AutocastScope autocast(t.precision, device_);
      loss_sum = model_->loss_sum(b, t.label_smoothing, nullptr);
    }
    strategy_->before_backward(m + 1 == micro.size());
    scaler_.scale(global_denom.defined() ? loss_sum / global_denom : loss_sum / denom).backward();
    window_loss_ += loss_sum.detach();
  }
  strategy_->after_backward();
  window_targets_ += step_targets;
  std::function<void(torch::Tensor&)> sum_shards, max_shards;
  if (dist::Communicator* shards = strategy_->shard_comm()) {
    sum_shards = [shards](torch::Tensor& x) { shards->all_reduce(x, dist::ReduceOp::kSum)->wait(); };
    max_shards = [shards](torch::Tensor& x) { shards->all_reduce(x, dist::ReduceOp::kMax)->wait(); };
  }
  const std::vector<torch::Tensor> grads = strategy_->grads();
  scaler_.unscale_grads(grads, max_shards);
  grad_norm_ = clip_grads(grads, t.max_grad_norm, sum_shards);
  std::optional<double> overflowed_at;
  if (scaler_.found_inf()) {
    overflowed_at = scaler_.current_scale();
  } else {
    strategy_->step();
  }
  scaler_.update();
  strategy_->zero_grad();
  return overflowed_at;
}

void Trainer::run_evaluation() {
  const double eval_loss = evaluate();
  state_.last_eval_loss = eval_loss;
  state_.last_eval_step = state_.step;
  if (!state_.best_eval_loss || eval_loss < *state_.best_eval_loss) {
    state_.best_eval_loss = eval_loss;
    state_.best_step = state_.step;
  }
  if (plateau_) plateau_->observe(eval_loss);
  for (auto& cb : callbacks_) cb->on_evaluate(state_, eval_loss);
}

std::string Trainer::save_reason(bool evaluated_new_best, bool epoch_ended, bool last_step, bool signalled) const {
  const auto& c = config_.checkpoint;
  if (signalled && c.on_signal == config::OnSignal::kSave) return "signal";
  if (last_step && c.at_end) return "end of training";
  if (c.every_steps > 0 && state_.step % c.every_steps == 0) return "every " + std::to_string(c.every_steps) + " steps";
  if (c.every_epoch && epoch_ended) return "end of epoch";
  if (c.keep_best && evaluated_new_best) return "new best eval loss";
  return {};
}

TrainResult Trainer::train() {
  const auto& t = config_.trainer;
  TrainResult result;
  model_->module().train();

  const auto schedule = optim::make_schedule_params(config_.scheduler, config_.optimizer.lr, total_steps_);
  if (t.early_stopping_patience) {
    callbacks_.push_back(std::make_shared<EarlyStopping>(*t.early_stopping_patience, t.early_stopping_threshold));
  }

  // The metrics are the first callback: they see every event before anything else reacts to it.
  metrics::RecorderOptions ro;
  ro.run_dir = run_dir_;
  ro.total_steps = total_steps_;
  ro.start_step = start_step_;
  ro.mfu = mfu_options(device_, *model_, config_);
  callbacks_.insert(callbacks_.begin(), std::make_shared<MetricsCallback>(ro));
  state_.data_wait_s = loaders_.train->data_wait_seconds();
  for (auto& cb : callbacks_) cb->on_train_begin(state_);
  if (loaders_.validation && model_->causal_lm()) {
    result.unigram_baseline = unigram_baseline(*loaders_.datasets.train, *loaders_.datasets.validation,
                                               config_.model.vocab_size);
    notify("unigram baseline (validation loss of token frequencies alone): " + std::to_string(*result.unigram_baseline));
  }
  util::log::info("training " + std::to_string(model_->non_embedding_parameters()) + " non-embedding parameters on " +
                  device_.str() + (start_step_ > 0 ? " from step " + std::to_string(start_step_) : std::string()) +
                  " to step " + std::to_string(total_steps_));

  const double samples = static_cast<double>(std::max<uint64_t>(1, loaders_.train->num_samples()));
  // Collectives between steps (logging, the stop agreement) count as training; evaluation and
  // checkpoints set their own phases.
  dist::PhaseScope training(world_->monitor(), dist::Phase::kTrain);
  while (state_.step < total_steps_) {
    const int64_t step = state_.step;
    const double factor = optim::lr_factor(schedule, step) * (plateau_ ? plateau_->factor() : 1.0);
    const uint64_t epoch_before = loaders_.train->epoch();
    const std::optional<double> overflowed_at = train_step(factor);
    if (overflowed_at) {
      ++window_skipped_;
      notify("step " + std::to_string(step + 1) + " skipped: inf/NaN gradients at loss scale " +
             metrics::format_number(*overflowed_at, 6) + "; the scale is now " +
             metrics::format_number(scaler_.current_scale(), 6));
    }

    state_.step = step + 1;
    state_.epoch = static_cast<double>(loaders_.train->cursor()) / samples;
    state_.data_wait_s = loaders_.train->data_wait_seconds();
    for (auto& cb : callbacks_) cb->on_step_end(state_);
    inject_test_fault();
    if (state_.step == start_step_ + 1) report_memory();  // the optimizer state exists from the first step

    if (state_.step % t.log_every == 0 || state_.step == total_steps_) {
      StepStats s;
      if (world_->size() > 1) {  // the window's loss over every rank's tokens
        window_targets_ = reduce_over_ranks(window_targets_, dist::ReduceOp::kSum);
        world_->comm().all_reduce(window_loss_)->wait();
      }
      s.loss = window_loss_.item<double>() / static_cast<double>(std::max<int64_t>(1, window_targets_));
      s.lr = config_.optimizer.lr * factor;
      s.grad_norm = grad_norm_.item<double>();
      s.peak_mem_mb = peak_memory_mib(device_);
      if (scaler_.enabled()) {
        s.loss_scale = scaler_.current_scale();
        s.skipped_steps = window_skipped_;
      }
      window_skipped_ = 0;
      window_loss_.zero_();
      window_targets_ = 0;
      result.last_loss = s.loss;
      for (auto& cb : callbacks_) cb->on_log(state_, s);
    }
    bool new_best = false;
    if (t.eval_every > 0 && (state_.step % t.eval_every == 0 || state_.step == total_steps_)) {
      const int64_t best_before = state_.best_step;
      run_evaluation();
      new_best = state_.best_step == state_.step && state_.best_step != best_before;
    }
    int signal = stop_signal_ ? stop_signal_->load() : 0;
    // The ranks must stop after the same step: a signal any rank saw counts for all.
    if (world_->size() > 1) signal = static_cast<int>(reduce_over_ranks(signal, dist::ReduceOp::kMax));
    const bool last = state_.step == total_steps_ || state_.should_stop;
    const std::string reason =
        save_reason(new_best, loaders_.train->epoch() != epoch_before, last, signal != 0);
    if (!reason.empty()) {
      try {
        result.last_checkpoint = save_checkpoint();
        notify("checkpoint saved (" + reason + "): " + result.last_checkpoint->string());
      } catch (const util::IoError& e) {
        if (config_.checkpoint.on_save_error == config::OnSaveError::kStop) throw;
        notify("checkpoint at step " + std::to_string(state_.step) + " FAILED, training on " +
               "(checkpoint.on_save_error=continue): " + e.what() + (e.hint().empty() ? "" : "; " + e.hint()));
      }
    }
    if (signal != 0) {
      result.interrupted = true;
      result.signal = signal;
      notify("signal " + std::to_string(signal) + ": stopped after step " + std::to_string(state_.step));
      break;
    }
    if (state_.should_stop) {
      notify("early stopping at step " + std::to_string(state_.step) + " (best eval loss at step " +
             std::to_string(state_.best_step) + ")");
      break;
    }
  }
  for (auto& cb : callbacks_) cb->on_train_end(state_);
  result.state = state_;
  return result;
}

}  // namespace hftrain::train
