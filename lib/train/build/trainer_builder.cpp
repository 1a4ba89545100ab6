#include "train/build/trainer_builder.h"

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "data/token_cache.h"
#include "model/decoder/lm_head_loss.h"
#include "parallel/comm/monitor.h"
#include "parallel/data_parallel/memory_report.h"
#include "peft/lora.h"
#include "peft/quantized_linear.h"
#include "train/build/model_from.h"
#include "train/build/pipeline_setup.h"
#include "train/build/tp_setup.h"
#include "train/build/determinism.h"
#include "train/build/wiring.h"
#include "train/preference/kto_task.h"
#include "train/preference/preference_task.h"
#include "train/preference/reference_pass.h"
#include "train/preference/reward_task.h"
#include "util/env.h"
#include "util/error.h"
#include "util/log.h"

namespace hftrain::train {
namespace {

// HFTRAIN_SDPA_BACKEND=cudnn|flash|efficient: the attention kernel SDPA tries first on CUDA (it
// falls back in PyTorch's order where that one does not take the shapes); unset: PyTorch's own
// order. For the GPU windows' A/B (cuDNN attention is often faster than flash on Hopper for
// training shapes); a config key once the figures choose a default.
void prefer_attention_backend(const util::Environment& env) {
  const std::optional<std::string> v = env.get("HFTRAIN_SDPA_BACKEND");
  if (!v || v->empty()) return;
  std::vector<at::SDPBackend> first;
  if (*v == "cudnn") {
    first = {at::SDPBackend::cudnn_attention};
  } else if (*v == "flash") {
    first = {at::SDPBackend::flash_attention};
  } else if (*v == "efficient") {
    first = {at::SDPBackend::efficient_attention};
  } else {
    throw util::ConfigError("environment variable HFTRAIN_SDPA_BACKEND='" + v->substr(0, 40) + "' is not an attention "
                            "backend", "use cudnn, flash or efficient, or unset it for PyTorch's order");
  }
  std::vector<int64_t> order;
  for (const at::SDPBackend b : first) order.push_back(static_cast<int64_t>(b));
  for (const at::SDPBackend b : at::globalContext().sDPPriorityOrder()) {
    if (b != first.front()) order.push_back(static_cast<int64_t>(b));
  }
  at::globalContext().setSDPPriorityOrder(order);
  util::log::info("HFTRAIN_SDPA_BACKEND: attention tries " + *v + " first");
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string label_list(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 20; ++i) out += (i ? ", " : "") + std::to_string(i) + " " + names[i];
  return names.size() > 20 ? out + ", ..." : out;
}

void check_vocabulary(const config::Config& config, const tokenizer::Tokenizer& tokenizer) {
  if (tokenizer.vocab_size() <= config.model.vocab_size) return;
  throw util::ConfigError("model.vocab_size (" + std::to_string(config.model.vocab_size) +
                              ") is smaller than the tokenizer's vocabulary (" +
                              std::to_string(tokenizer.vocab_size()) + ")",
                          "set model.vocab_size=" + std::to_string(tokenizer.vocab_size()) + " or more");
}

// The master weights, the seam and the runner (the model and strategy built).
void add_loop_parts(TrainerParts& parts, const config::Config& config, parallel::World& world,
                    const torch::Device& device) {
  TaskModel* model = parts.model.get();
  if (config.trainer.param_dtype == config::ParamDtype::kBf16) {
    // zero1/2 keep the masters of what they step themselves (their pieces, sharded with the
    // optimizer state) and hold those parameters in bf16 already.
    const bool strategy_keeps = parts.strategy->keeps_fp32_masters();
    std::vector<torch::Tensor> trained, frozen;
    for (const auto& [name, p] : model->parameters_by_name()) {
      if (!p.requires_grad()) {
        frozen.push_back(p);
      } else if (!strategy_keeps) {
        trained.push_back(p);
      }
    }
    parts.masters =
        std::make_unique<MasterWeights>(std::move(trained), frozen, /*fp32_accumulation=*/world.dp_size() == 1);
  }
  std::optional<parallel::Parallelism::Stages> stages;
  if (world.pp_size() > 1) {
    auto pipeline = std::make_unique<PipelineRunner>(*model, world, config, device, parts.strategy->unit_hooks());
    parts.pipeline = pipeline.get();
    stages = parallel::Parallelism::Stages{
        .whole = [model, &world, boundaries = pipeline->boundaries(), device](parallel::Parallelism::Access access) {
          return std::unique_ptr<parallel::ScopeGuard>(
              std::make_unique<PipelineWhole>(*model, world, boundaries, access, device));
        },
        .memory_clause = pipeline->memory_clause()};
    parts.runner = std::move(pipeline);
  } else {
    // Weights in bf16 themselves (param_dtype=bf16) compute without autocast.
    const config::Precision autocast = parts.masters ? config::Precision::kFp32 : config.trainer.precision;
    parts.runner =
        std::make_unique<PlainRunner>(*model, autocast, device, config.trainer.label_smoothing, world.dp_size());
  }
  parts.parallel = std::make_unique<parallel::Parallelism>(
      world, *parts.strategy, device, [model] { return model->parameters_by_name(); },
      [model](const std::string& name, int rank) { return model->tp_split(name, rank); }, std::move(stages),
      config.distributed.sequence_parallel);
}

// The policy wrapped by preference.objective, with DPO's reference: the starting weights as a frozen
// copy, or with LoRA the same model with its adapters off.
std::unique_ptr<TaskModel> with_preference_objective(std::unique_ptr<TaskModel> policy, const config::Config& config,
                                                     const torch::Device& device, int64_t pad_id,
                                                     parallel::Communicator& data_parallel) {
  const config::PreferenceConfig& p = config.preference;
  if (p.objective == config::PreferenceObjective::kReward) {
    util::log::info("preference: a reward model (Bradley-Terry on the pairs; scores at each sequence's last token "
                    "before the padding id " + std::to_string(pad_id) + ")");
    return make_reward_task(std::move(policy), p, pad_id);
  }
  std::unique_ptr<PreferenceReference> reference;
  const bool kto = p.objective == config::PreferenceObjective::kKto;
  if (p.objective == config::PreferenceObjective::kDpo || kto) {
    const bool copy = dpo_reference_copy(config);
    if (copy && config.peft.quantize_base != config::QuantizeBase::kNone) {
      throw util::ConfigError("preference.reference=copy would copy a base that peft.quantize_base keeps quantized",
                              "use preference.reference=adapters_off (or auto) with QLoRA");
    }
    if (p.reference == config::PreferenceReference::kPrecomputed) {
      util::log::info("preference: DPO against the reference log-probs computed before training (no reference "
                      "model in memory)");
    } else if (copy) {
      reference = frozen_copy_reference(*policy, *policy->decoder_spec(), device);
      util::log::info(std::string("preference: ") + (kto ? "KTO" : "DPO") +
                      " against a frozen copy of the starting weights (" + std::to_string(reference->parameters()) +
                      " parameters)");
    } else {
      // A continued adapter (peft.from) does not start at the base: its starting values are kept.
      const bool continued = config.peft.from.has_value();
      reference = adapters_off_reference(*policy, continued);
      util::log::info(continued ? "preference: against the starting model (the continued adapter's starting "
                                  "values swapped in, " + std::to_string(reference->parameters()) + " parameters)"
                                : std::string("preference: ") + (kto ? "KTO" : "DPO") +
                                      " against the base model (the adapters off)");
    }
  }
  if (kto) {
    // The KL point is averaged over the data-parallel ranks on every forward (TRL gathers it).
    parallel::Communicator* dp = data_parallel.size() > 1 ? &data_parallel : nullptr;
    auto mean = [dp](const torch::Tensor& value) {
      if (!dp) return value;
      torch::Tensor x = value.detach().reshape({1}).clone();
      dp->all_reduce(x)->wait();
      return (x / dp->size()).reshape({});
    };
    return make_kto_task(std::move(policy), p, std::move(reference), mean);
  }
  return make_preference_task(std::move(policy), p, std::move(reference));
}

// preference.reference=precomputed: the starting model scores every pair once (reference_pass.h),
// cached in the token cache's folder.
void precompute_reference(TaskModel& model, data::PreferencePairs& pairs, const config::Config& config,
                          const data::PreferenceOptions& preference, int32_t pad_id, const torch::Device& device,
                          parallel::World& world) {
  parallel::PhaseScope phase(world.monitor(), parallel::Phase::kStartup);
  ReferencePassOptions o;
  o.batch_pairs = config.trainer.micro_batch_size;
  o.pad_id = pad_id;
  o.pad_to_multiple = preference.pad_to_multiple_of;
  const std::filesystem::path dir = config.data.cache_dir.empty()
                                        ? data::default_cache_dir(util::Environment::process())
                                        : std::filesystem::path(config.data.cache_dir);
  if (config.data.cache) o.cache_file = reference_cache_file(dir, pairs, reference_weights_key(config, device));
  // The starting model as it is: a new adapter adds nothing yet, a continued one (peft.from) its starting values.
  precompute_reference_logps(model, pairs, o, device, world.data_parallel(), world.is_main());
}

}  // namespace

TrainerParts build_trainer_parts(const config::Config& config, parallel::World& world, const torch::Device& device,
                                 const std::optional<std::filesystem::path>& resume_from) {
  const auto& t = config.trainer;
  if (t.precision == config::Precision::kFp16 && !device.is_cuda()) {
    throw util::ConfigError("trainer.precision=fp16 needs a CUDA device (dynamic loss scaling runs there)",
                            "use trainer.precision=bf16 on the CPU");
  }
  if (config.debug.underflow_overflow && config.model.arch == config::ModelArch::kBert) {
    throw util::ConfigError("debug.underflow_overflow traces the decoders' modules; model.arch=bert (an encoder) is "
                            "not traced",
                            "set debug.underflow_overflow=false, or debug.detect_anomaly=true to name the backward "
                            "operation that makes a NaN");
  }
  // The layout first: a mesh that cannot run stops before the data is prepared.
  const std::optional<model::ModelSpec> shape = decoder_spec(config);
  check_tensor_parallel(config, shape ? &*shape : nullptr);
  check_pipeline_parallel(config, shape ? &*shape : nullptr);
  {
    parallel::PhaseScope phase(world.monitor(), parallel::Phase::kStartup);
    world.set_mesh(static_cast<int>(config.distributed.tensor_parallel),
                   static_cast<int>(config.distributed.pipeline_parallel));
  }
  torch::manual_seed(static_cast<uint64_t>(config.run.seed));
  if (device.is_cuda()) {
    at::globalContext().setAllowTF32CuBLAS(t.tf32);
    at::globalContext().setAllowTF32CuDNN(t.tf32);
    prefer_attention_backend(util::Environment::process());
  }
  set_deterministic(t.deterministic, device);
  TrainerParts parts;
  parts.tokenizer = tokenizer::make_tokenizer(tokenizer_options(config));
  check_vocabulary(config, *parts.tokenizer);

  // A BERT encoder classifies sequences: its labels come from the model directory's classifier
  // (named ones) or from the training data, and fix the classifier's size.
  const bool classify = config.model.arch == config::ModelArch::kBert;
  const bool lora = config.peft.method == config::PeftMethod::kLora;
  // A resume reads model.from too where it is not all in the checkpoint: a LoRA run's frozen base, and
  // DPO's reference copy of the starting weights (the checkpoint holds the policy's).
  const bool from_model_dir =
      config.model.from && (!resume_from || lora || dpo_reference_copy(config) || precomputed_reference(config));
  std::optional<ModelSource> source;
  if (from_model_dir) source = read_model_source(*config.model.from);
  if (classify && resume_from) source = read_model_source(*resume_from);
  std::optional<model::BertSpec> bert;
  if (classify) {
    bert = bert_spec(config, source, parts.tokenizer->pad_id());
    check_encoder_tensor_parallel(*bert, config);
  }
  if (bert && bert->roberta() && bert->pad_token_id != parts.tokenizer->pad_id()) {
    // RoBERTa numbers the positions by the padding id: the batches' padding must be that id.
    throw util::ConfigError("the RoBERTa model's pad_token_id is " + std::to_string(*bert->pad_token_id) +
                                " but the tokenizer pads with id " + std::to_string(parts.tokenizer->pad_id()) +
                                " (RoBERTa counts positions over the tokens that are not padding)",
                            "use the model's own tokenizer (tokenizer.json beside its config.json)");
  }
  std::optional<data::PreferenceOptions> preference;
  data::PreferencePairs pairs;
  data::LoaderOptions loader_options;
  {
    // Rank 0 tokenizes into the token cache first; the other ranks then map it.
    parallel::PhaseScope phase(world.monitor(), parallel::Phase::kData);
    const bool many = world.size() > 1;
    if (many && !world.is_main()) world.comm().barrier();
    // The ranks of a tensor-parallel group read the same batches: the data splits over data parallelism.
    const data::DataOptions options = data_options(config, world.dp_rank(), world.dp_size());
    if (classify) {
      parts.loaders = data::make_classification_loaders(classification_options(config, source), options.loader,
                                                        *parts.tokenizer, device);
    } else if (config.preference.objective == config::PreferenceObjective::kKto) {
      std::shared_ptr<const tokenizer::ChatTemplate> chat;  // encodes the examples; not needed after
      parts.loaders = data::make_kto_loaders(kto_options(config, chat), options.loader, *parts.tokenizer, device);
    } else if (config.preference.objective != config::PreferenceObjective::kNone) {
      // Encoded now (bad records stop the run before the model is built), loaders once the model is
      // there: a precomputed reference scores the pairs first.
      std::shared_ptr<const tokenizer::ChatTemplate> chat;  // encodes the pairs; not needed after
      preference = preference_options(config, chat);
      pairs = data::encode_preference(*preference, *parts.tokenizer);
      loader_options = options.loader;
    } else {
      parts.loaders = data::make_loaders(options, *parts.tokenizer, device);
    }
    if (many && world.is_main()) world.comm().barrier();
  }
  if (t.eval_every > 0 && !parts.loaders.validation && (!preference || pairs.validation.empty())) {
    throw util::DataError("trainer.eval_every is set but the validation split is empty",
                          "name data.validation sources or a data.validation_fraction large enough to hold a document");
  }

  if (classify) {
    const auto& labels = parts.loaders.labels.names;
    bert->num_labels = static_cast<int64_t>(labels.size());
    parts.model = make_sequence_classifier(*bert, labels);
    util::log::info(std::string(bert->per_token ? "token classification over " : "sequence classification over ") +
                    std::to_string(bert->num_labels) + (bert->per_token ? " tags: " : " labels: ") +
                    label_list(labels));
  } else {
    (void)model::chunk_rows_from_env();  // a bad HFTRAIN_LM_HEAD_CHUNK_ROWS stops the run here
    // Weights that model.from replaces next are not drawn first (a second of start-up at 124M).
    model::ModelSpec spec = *shape;
    if (spec.score_outputs > 0) spec.pad_token_id = parts.tokenizer->pad_id();  // a reward model reads past it
    parts.model = make_causal_lm(spec, from_model_dir ? model::WeightInit::kSkip : model::WeightInit::kRandom);
  }
  // QLoRA (peft.quantize_base) quantizes the base's linear layers as model.from is read, on the
  // training device, so that the base never lives in memory at full precision.
  const model::ModelSpec* decoder = parts.model->decoder_spec();
  const bool qlora = from_model_dir && decoder && config.peft.method == config::PeftMethod::kLora &&
                     config.peft.quantize_base != config::QuantizeBase::kNone;
  peft::QuantizeOnLoad on_load;
  if (qlora) {
    const auto keep = peft::saved_module_params(model::hf_parameters(*decoder), config.peft.modules_to_save);
    on_load = peft::quantize_on_load(parts.model->module(), config.peft.quantize_base, keep, device,
                                     model::hf_linear_modules(*decoder));
  }
  if (from_model_dir) parts.model->load(*config.model.from, "model.from", on_load.handover);
  // Whole weights in place: each rank keeps its stage's, then its pieces of them.
  std::vector<std::string> whole_names;
  for (const auto& [name, p] : parts.model->parameters_by_name()) whole_names.push_back(name);
  split_pipeline(*parts.model, world, config);
  split_model(*parts.model, world, config);
  parts.peft = attach_peft(config, *parts.model);
  parts.model->set_activation_checkpointing(config.model.activation_checkpointing);
  parts.model->set_neftune_alpha(t.neftune_noise_alpha);
  parts.model->module().to(device);
  if (preference) {
    if (precomputed_reference(config)) {
      precompute_reference(*parts.model, pairs, config, *preference, parts.tokenizer->pad_id(), device, world);
    }
    parts.loaders = data::preference_loaders(std::move(pairs), *preference, loader_options,
                                             parts.tokenizer->pad_id(), device);
  }
  if (config.preference.objective != config::PreferenceObjective::kNone) {
    parts.model = with_preference_objective(std::move(parts.model), config, device, parts.tokenizer->pad_id(),
                                            world.data_parallel());
  }
  if (qlora) {
    const peft::QuantizedBase& q = *on_load.report;
    util::log::info(std::string("QLoRA: the frozen base's ") + std::to_string(q.layers) + " linear layers (" +
                    std::to_string(q.parameters) + " weights) stored as " +
                    peft::quantize_base_name(config.peft.quantize_base) + " as they were read: " +
                    parallel::format_bytes(q.bytes_before) + " -> " + parallel::format_bytes(q.bytes_after));
  }
  {
    parallel::PhaseScope phase(world.monitor(), parallel::Phase::kStartup);
    TrainableParams trained{parts.model->parameters_by_name(), parts.model->parameter_units()};
    if (parts.peft) trained = trainable_params(trained.params, trained.units);
    // Under pipeline parallelism the stage's optimizer, its globs checked against the whole model.
    std::vector<std::string> stage_names;
    for (const auto& [name, p] : trained.params) stage_names.push_back(name);
    const config::OptimizerConfig optimizer =
        world.pp_size() > 1 ? stage_optimizer_config(config.optimizer, whole_names, stage_names) : config.optimizer;
    parts.strategy = parallel::ShardingStrategy::create(
        world, strategy_options(config, optimizer, hidden_matrices(parts.model->hf_linear_modules())), trained.params,
        trained.units);
    parts.model->set_unit_hooks(parts.strategy->unit_hooks());
  }
  // Every rank initialised the same weights from the same seed; from here on (dropout) each
  // data-parallel rank draws its own numbers (a tensor-parallel group draws the same).
  if (world.size() > 1) torch::manual_seed(default_stream_seed(config, world.tp_group_index()));
  add_loop_parts(parts, config, world, device);
  return parts;
}

int64_t plan_total_steps(const config::Config& config, const data::DataLoader& train, int world_size) {
  const auto& t = config.trainer;
  const int64_t micro = t.grad_accum_steps;
  int64_t total = std::numeric_limits<int64_t>::max();
  if (t.max_steps) total = std::min(total, *t.max_steps);
  if (t.max_epochs) {
    total = std::min(total, *t.max_epochs * ceil_div(static_cast<int64_t>(train.batches_per_epoch()), micro));
  }
  if (t.max_tokens) {
    const int64_t per_step = t.micro_batch_size * config.data.seq_len * micro * world_size;
    total = std::min(total, ceil_div(*t.max_tokens, per_step));
  }
  return std::max<int64_t>(total, 1);
}

}  // namespace hftrain::train
