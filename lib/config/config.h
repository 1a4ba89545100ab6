// The resolved, validated configuration: plain structs, read once. Every field is declared in
// the schema (keys_*.cpp) with its type, default, range and documentation; `hftrain config --schema`
// prints them and README.md's config reference is generated from the same declarations.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hftrain::config {

// Enumerations mirror the allowed strings of their keys, in the same order (see keys_*.cpp).
enum class ModelArch { kGpt2, kLlama, kBert };
enum class Encoder { kBert, kRoberta, kModernBert, kDebertaV2 };
// llama: the Hugging Face family an export names where the shape fits more than one.
enum class HfFamily { kAuto, kMistral };
enum class Task {
  kSequenceClassification,
  kTokenClassification
};  // model.arch=bert: what the classifier labels  // model.arch=bert: whose encoder (BERT's, RoBERTa's positions and
    // head)
enum class RopeType { kDefault, kLinear, kDynamic, kLlama3, kYarn, kLongrope };
enum class AttentionBias { kNone, kQkv, kAll };  // "none", "qkv" (Qwen2), "all" (GPT-2)
// "none", "head" (RMSNorm over each head of q and k: Qwen3), "projection" (over all of q, of k: OLMo 2)
enum class QkNorm { kNone, kHead, kProjection };
// Where a block normalises: "pre" (each sublayer's input: GPT-2, Llama), "post" (each sublayer's
// output, before the residual add: OLMo 2), "sandwich" (both: Gemma 2 and 3)
enum class NormPlacement { kPre, kPost, kSandwich };
// The gated MLP's activation: "silu" (SwiGLU: Llama), "gelu_tanh" (GeGLU with tanh GELU: Gemma)
enum class Activation { kSilu, kGeluTanh };
enum class TokenizerType { kByte, kBpe, kHf };
enum class OptimizerName {
  kAdamW, kSgd, kAdafactor, kLion, kAdamW8bit, kAdagrad, kRmsprop, kScheduleFreeAdamW, kGaloreAdamW, kMuon, kApolloAdamW
};
enum class PeftMethod { kNone, kLora };
enum class LoraInit { kDefault, kGaussian };      // peft's kaiming-uniform A, or A ~ N(0, 1/r)
enum class QuantizeBase { kNone, kNf4, kInt8 };  // how a LoRA run stores its frozen base weights
enum class GaloreProjection { kStd, kReverseStd, kRight, kLeft, kFull };
// muon's learning rate per matrix (torch.optim.Muon's adjust_lr_fn): "original" (Keller Jordan's
// sqrt(max(1, rows / cols))) or "match_rms_adamw" (Moonshot's 0.2 sqrt(max(rows, cols))).
enum class MuonAdjustLr { kOriginal, kMatchRmsAdamw };
// apollo_adamw's gradient scaling: per channel (a row or column) or one for the tensor (APOLLO-Mini).
enum class ApolloScale { kChannel, kTensor };
enum class SchedulerName {
  kConstant, kConstantWithWarmup, kLinear, kCosine, kCosineWithRestarts, kCosineWithMinLr,
  kPolynomial, kInverseSqrt, kWarmupStableDecay, kReduceLrOnPlateau
};
enum class RampShape { kLinear, kCosine, kOneMinusSqrt };  // "linear", "cosine", "1-sqrt"
enum class PlateauMode { kMin, kMax };
enum class ThresholdMode { kRel, kAbs };
enum class Precision { kFp32, kBf16, kFp16 };
// trainer.param_dtype: how the model's parameters are stored while training (train/step/master_weights.h).
enum class ParamDtype { kFp32, kBf16 };
enum class Strategy { kDdp, kZero1, kZero2, kZero3, kHybrid };
enum class PipelineSchedule { kGpipe, k1f1b };
enum class Backend { kAuto, kNccl, kMpi };
enum class LogLevel { kDebug, kInfo, kWarn, kError };
enum class DataFormat { kAuto, kText, kJsonl, kChat, kTokens };
enum class TokenWidth { kUint16, kUint32 };
enum class Packing { kPack, kPad };
enum class DeviceChoice { kAuto, kCpu, kCuda };

struct RunConfig {
  std::string name;
  std::string output_dir;
  int64_t seed = 0;
  std::map<std::string, std::string> tags;
  bool export_hf = false;  // also write final-hf/ (Hugging Face layout) at the end
};

// RoPE scaling as transformers' rope_parameters describe it (llama family).
struct RopeScalingConfig {
  RopeType type = RopeType::kDefault;
  double factor = 0;
  std::optional<int64_t> original_max_seq_len;  // llama3, yarn, longrope; unset: model.max_seq_len
  double low_freq_factor = 0;                   // llama3
  double high_freq_factor = 0;                  // llama3
  double beta_fast = 0;                         // yarn
  double beta_slow = 0;                         // yarn
  std::optional<double> attention_factor;       // yarn, longrope; unset: the type's formula
  bool truncate = true;                         // yarn
  std::vector<double> short_factor;             // longrope: per rotated pair, up to original_max_seq_len
  std::vector<double> long_factor;              // longrope: past it
};

struct ModelConfig {
  ModelArch arch = ModelArch::kGpt2;
  Encoder encoder = Encoder::kBert;  // bert
  HfFamily hf_family = HfFamily::kAuto;  // llama: the family an export names (model.from's)
  Task task = Task::kSequenceClassification;  // bert
  std::optional<std::string> from;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t d_model = 0;
  int64_t max_seq_len = 0;
  int64_t vocab_size = 0;
  std::optional<int64_t> n_kv_head;     // unset: n_head (no grouped-query attention)
  std::optional<int64_t> d_ff;          // unset: 4 x d_model (gpt2), 8/3 x d_model rounded up to 64 (llama)
  std::optional<int64_t> head_dim;      // unset: d_model / n_head
  QkNorm qk_norm = QkNorm::kNone;       // llama
  NormPlacement norm_placement = NormPlacement::kPre;  // llama
  double partial_rotary_factor = 1.0;   // llama: RoPE on the first head_dim x this of each head
  bool fused_projections = false;       // llama: Hugging Face tensors qkv_proj and gate_up_proj (Phi-3)
  Activation activation = Activation::kSilu;      // llama: the gated MLP's activation
  bool norm_unit_offset = false;                  // llama: RMSNorm scales by 1 + weight (Gemma)
  bool scale_embeddings = false;                  // llama: embeddings times sqrt(d_model) (Gemma)
  std::optional<double> query_pre_attn_scalar;    // llama: attention scale is this^-1/2; unset: head_dim
  std::optional<double> attn_logit_softcapping;   // llama: cap * tanh(scores / cap); unset: none
  std::optional<double> final_logit_softcapping;  // llama: the same on the output logits
  std::optional<int64_t> sliding_window;          // llama: sliding layers attend to this many positions
  int64_t sliding_window_pattern = 0;             // llama: every Nth layer attends globally; 0: none does
  std::optional<double> rope_local_theta;         // llama: sliding layers' RoPE base; unset: as the others
  int64_t n_experts = 0;                          // llama: a mixture of experts in place of the MLP; 0: dense
  int64_t experts_per_token = 2;                  // llama, MoE: experts each token is routed to (top-k)
  std::optional<int64_t> expert_d_ff;             // llama, MoE: one expert's hidden size; unset: d_ff
  bool moe_renormalize = true;                    // llama, MoE: top-k weights rescaled to sum to 1
  int64_t moe_every = 1;                          // llama, MoE: layers N, 2N, ... (from 1) are MoE, the rest dense
  int64_t shared_expert_d_ff = 0;                 // llama, MoE: a shared expert every token passes (Qwen2-MoE); 0: none
  double router_aux_loss_coef = 0;                // llama, MoE: weight of the load-balancing loss; 0: none
  double rope_theta = 0;                // llama
  std::optional<double> norm_eps;       // unset: 1e-5 (gpt2 LayerNorm), 1e-6 (llama RMSNorm)
  double dropout = 0;
  std::optional<bool> tie_embeddings;   // unset: true (gpt2), false (llama)
  std::optional<AttentionBias> attention_bias;  // unset: all (gpt2), none (llama)
  std::optional<bool> mlp_bias;         // unset: true (gpt2), false (llama)
  RopeScalingConfig rope_scaling;       // llama
  double init_std = 0;
  bool activation_checkpointing = false;
};

// One entry of data.train or data.validation: a path (a file, a folder or a glob), or a mapping
// with the path and what sets this source apart. A field left unset takes the data.* value.
struct DataSource {
  std::string path;
  std::optional<double> weight;  // training mixtures: this source's share of the samples drawn
  std::string name;              // in metrics and evaluation; "": made from the path
  std::optional<DataFormat> format;
  std::optional<std::string> text_field, prompt_field, response_field, messages_field, separator;
  // A bare path: written back as a plain string.
  bool plain() const {
    return !weight && name.empty() && !format && !text_field && !prompt_field && !response_field &&
           !messages_field && !separator;
  }
  bool operator==(const DataSource&) const = default;
};

struct TokenizerConfig {
  TokenizerType type = TokenizerType::kByte;
  std::optional<std::string> path;
  std::optional<std::string> eos_token;  // unset: the tokenizer's own (tokenizer_config.json, post-processor, name)
  std::optional<std::string> pad_token;
};

struct DataConfig {
  std::vector<DataSource> train;
  std::vector<DataSource> validation;
  int64_t seq_len = 0;
  double validation_fraction = 0;
  DataFormat format = DataFormat::kAuto;
  std::vector<std::string> exclude;
  std::string separator;
  std::string text_field;
  std::string text_pair_field;  // classification: the second text of a pair ("" for single texts)
  std::string label_field;      // classification: the label column or field
  std::string prompt_field;
  std::string margin_field;      // preference pairs' optional margin
  std::string completion_field;  // KTO's unpaired records
  std::string response_field;
  std::string messages_field;
  int64_t max_prompt_len = 0;  // preference pairs: the prompt's last tokens kept (0: all)
  std::string chat_template;  // auto | hftrain | chatml | a file or directory
  TokenWidth token_dtype = TokenWidth::kUint16;
  Packing packing = Packing::kPack;
  std::optional<bool> document_mask;  // unset: true when every training source is JSONL or chat
  int64_t pad_to_multiple_of = 1;
  bool shuffle = true;
  int64_t prefetch_batches = 0;
  int64_t num_workers = 0;
  bool cache = true;
  std::string cache_dir;
};

// transformers.Adafactor's knobs, with the Trainer's choices (no relative step, no parameter scaling).
struct AdafactorConfig {
  std::optional<double> beta1;  // unset: no first moment
  double decay_rate = 0;
  double clip_threshold = 0;
  double eps1 = 0;
  double eps2 = 0;
  bool scale_parameter = false;
};

// torch.optim.Adagrad's knobs besides lr, eps and weight decay.
struct AdagradConfig {
  double lr_decay = 0;
  double initial_accumulator_value = 0;
};

// torch.optim.RMSprop's knobs besides lr, eps, momentum and weight decay.
struct RmspropConfig {
  double alpha = 0;
  bool centered = false;
};

// Schedule-Free AdamW (Defazio et al., 2024), as the schedulefree package's AdamWScheduleFree.
struct ScheduleFreeConfig {
  int64_t warmup_steps = 0;
  double r = 0;
  double weight_lr_power = 0;
};

// GaLore (Zhao et al., 2024): AdamW on gradients projected to a low-rank subspace per matrix.
struct GaloreConfig {
  int64_t rank = 0;
  int64_t update_proj_gap = 0;
  double scale = 0;
  GaloreProjection proj_type = GaloreProjection::kStd;
  std::vector<std::string> target_modules;  // parameter-name globs (the Trainer's optim_target_modules)
};

// Muon (Jordan et al., 2024): Newton-Schulz orthogonalised momentum for the hidden weight matrices,
// AdamW (optimizer.beta1/beta2/eps) for the rest, as torch.optim.Muon and its usual pairing.
struct MuonConfig {
  double momentum = 0;
  bool nesterov = true;
  int64_t ns_steps = 0;
  double eps = 0;
  MuonAdjustLr adjust_lr = MuonAdjustLr::kOriginal;
  std::vector<std::string> params;  // parameter-name globs Muon updates; empty: the hidden weight matrices
};

// APOLLO (Zhu et al., 2024): AdamW's moments of a random low-rank projection of each matrix's
// gradient scale the full gradient per channel or per tensor, as apollo-torch's APOLLOAdamW.
struct ApolloConfig {
  int64_t rank = 0;
  int64_t update_proj_gap = 0;
  double scale = 0;
  ApolloScale scale_type = ApolloScale::kChannel;
  GaloreProjection proj_type = GaloreProjection::kStd;  // std, reverse_std, right, left (not full)
  bool scale_front = false;
  bool norm_growth_limiter = true;  // Fira's limiter (apollo-torch's disable_nl=False)
  std::vector<std::string> target_modules;
};

struct OptimizerConfig {
  OptimizerName name = OptimizerName::kAdamW;
  double lr = 0;
  double weight_decay = 0;
  std::optional<double> beta1;  // unset: 0.9 (adamw, lion)
  std::optional<double> beta2;  // unset: 0.999 (adamw), 0.99 (lion)
  double eps = 0;               // adamw, adagrad, rmsprop
  double momentum = 0;          // sgd, rmsprop
  bool nesterov = false;        // sgd
  std::vector<std::string> no_decay;               // glob patterns of parameter names
  std::map<std::string, double> group_lr;            // glob pattern -> learning rate
  std::map<std::string, double> group_weight_decay;  // glob pattern -> weight decay
  AdafactorConfig adafactor;
  bool amsgrad = false;  // adamw: keep the maximum of the second moments
  ScheduleFreeConfig schedule_free;
  GaloreConfig galore;
  MuonConfig muon;
  ApolloConfig apollo;
  AdagradConfig adagrad;
  RmspropConfig rmsprop;
};

// Parameter-efficient fine-tuning (peft.*): LoRA adapters on a frozen base model.
struct LoraConfig {
  int64_t r = 0;
  double alpha = 0;
  double dropout = 0;
  std::vector<std::string> target_modules;  // Hugging Face module-name globs; empty: peft's default
  bool use_rslora = false;                  // scale alpha / sqrt(r) instead of alpha / r
  bool use_dora = false;                    // DoRA: a trained magnitude per output row
  LoraInit init = LoraInit::kDefault;
};

// Preference training (docs/notes/preference.md): the objective, its coefficients, the reference.
enum class PreferenceObjective { kNone, kDpo, kSimpo, kOrpo, kReward, kKto };
enum class DpoLossType { kSigmoid, kHinge, kIpo, kRobust };
enum class PreferenceReference { kAuto, kCopy, kAdaptersOff, kPrecomputed };
struct PreferenceConfig {
  PreferenceObjective objective = PreferenceObjective::kNone;
  DpoLossType loss_type = DpoLossType::kSigmoid;
  double beta = 0.1;
  double label_smoothing = 0;
  double gamma = 0.5;
  double cpo_alpha = 0;
  double center_coefficient = 0;  // reward: TRL's center_rewards_coefficient (0: off)
  double desirable_weight = 1;    // kto
  double undesirable_weight = 1;  // kto
  PreferenceReference reference = PreferenceReference::kAuto;
};

struct PeftConfig {
  PeftMethod method = PeftMethod::kNone;
  LoraConfig lora;
  std::vector<std::string> modules_to_save;  // Hugging Face module names trained in full
  std::optional<std::string> from;           // a peft adapter directory to continue
  QuantizeBase quantize_base = QuantizeBase::kNone;
};

// warmup_stable_decay's phases (Hugging Face get_wsd_schedule).
struct WsdConfig {
  std::optional<int64_t> decay_steps;
  std::optional<int64_t> stable_steps;  // unset: whatever warmup and decay leave of training
  RampShape warmup_type = RampShape::kLinear;
  RampShape decay_type = RampShape::kCosine;
};

// reduce_lr_on_plateau (torch.optim.lr_scheduler.ReduceLROnPlateau), stepped by eval loss.
struct PlateauConfig {
  PlateauMode mode = PlateauMode::kMin;
  double factor = 0;
  int64_t patience = 0;
  double threshold = 0;
  ThresholdMode threshold_mode = ThresholdMode::kRel;
  int64_t cooldown = 0;
  double min_lr = 0;
};

struct SchedulerConfig {
  SchedulerName name = SchedulerName::kConstant;
  int64_t warmup_steps = 0;
  std::optional<double> warmup_ratio;  // a fraction of the run's steps (the Trainer's warmup_ratio)
  std::optional<double> num_cycles;   // unset: 0.5 (cosine family, wsd), 1 (cosine_with_restarts)
  std::optional<double> min_lr;       // absolute floor (cosine_with_min_lr)
  std::optional<double> min_lr_rate;  // floor as a fraction of optimizer.lr (cosine_with_min_lr, wsd)
  double lr_end = 0;                  // polynomial
  double power = 0;                   // polynomial
  std::optional<int64_t> timescale;   // inverse_sqrt; unset: warmup_steps, or 10000 without warmup
  WsdConfig wsd;
  PlateauConfig plateau;
};

enum class OnNonfinite { kSkip, kRollback, kStop };

// EMA weights (optim/ema.h): an exponential moving average of the trained weights in fp32, kept as
// optimizer state (sharded with it under zero, checkpointed with it), updated after every `every`th
// step with a decay that warms up as diffusers' EMAModel's: 0 for the first `start_step` + 1
// updates, then min(decay, (1 + n) / (10 + n)) (inverse) or min(decay, 1 - (1 + n / inv_gamma)^-power)
// (power) or decay (none), and at least min_decay; n counts the updates after those.
enum class EmaWarmup { kInverse, kPower, kNone };
struct EmaConfig {
  bool enabled = false;
  double decay = 0;
  double min_decay = 0;
  int64_t every = 0;
  int64_t start_step = 0;
  EmaWarmup warmup = EmaWarmup::kInverse;
  double inv_gamma = 0;
  double power = 0;
  bool evaluate = true;      // evaluations see the average
  bool export_final = true;  // final/ holds the average
};

struct TrainerConfig {
  std::optional<int64_t> max_steps;
  std::optional<int64_t> max_epochs;
  int64_t micro_batch_size = 0;
  int64_t grad_accum_steps = 0;
  double max_grad_norm = 0;  // +inf: measure and log only
  Precision precision = Precision::kFp32;
  ParamDtype param_dtype = ParamDtype::kFp32;  // bf16: bf16 weights and gradients, fp32 masters
  int64_t log_every = 0;
  int64_t eval_every = 0;  // 0: never
  std::optional<int64_t> max_tokens;       // stop after this many training tokens
  std::optional<int64_t> eval_batches;     // unset: the whole validation split
  double label_smoothing = 0;
  bool tf32 = false;
  DeviceChoice device = DeviceChoice::kAuto;
  std::optional<int64_t> early_stopping_patience;  // evaluations without improvement; unset: off
  double early_stopping_threshold = 0;
  // The best model (train/best_metric.h): the evaluation figure that ranks evaluations, its
  // direction (unset: lower is better for a name ending in "loss", higher otherwise), and whether
  // final/ is the best checkpoint's model; evaluations at the start and at each epoch's end.
  std::string metric_for_best_model;
  std::optional<bool> greater_is_better;
  bool load_best_model_at_end = false;
  bool eval_on_start = false;
  bool eval_on_epoch_end = false;
  double neftune_noise_alpha = 0;  // NEFTune: uniform noise on the input embeddings while training (0: off)
  bool deterministic = false;      // deterministic kernels only (train/build/determinism.h)
  EmaConfig ema;
  double fp16_init_scale = 0;
  int64_t fp16_growth_interval = 0;
  // Non-finite and divergent steps (train/step/divergence.h): what a bad step does, how many in a row
  // stop the run, and the loss spike that counts as one (factor 0: spikes are not judged).
  OnNonfinite on_nonfinite = OnNonfinite::kSkip;
  int64_t max_consecutive_skips = 0;
  double spike_factor = 0;
  int64_t spike_window = 0;
};

// Numeric debugging: the forward's per-module abs-min/abs-max trace (model/numeric_trace.h), its
// frames kept, and autograd's anomaly mode.
struct DebugConfig {
  bool underflow_overflow = false;
  int64_t max_frames = 0;
  bool detect_anomaly = false;
};

enum class OnSignal { kSave, kExit };
enum class OnSaveError { kStop, kContinue };

struct CheckpointConfig {
  int64_t every_steps = 0;  // 0: no periodic saves
  bool every_epoch = false;
  bool at_end = true;
  int64_t keep_last = 0;    // 0: keep all
  bool keep_best = false;   // save on a new best eval loss; never delete that checkpoint
  int64_t shard_size = 0;   // bytes per safetensors shard of the model weights
  OnSignal on_signal = OnSignal::kSave;
  std::optional<int64_t> signal_exit_code;  // unset: 128 + N
  OnSaveError on_save_error = OnSaveError::kStop;
  bool async_save = false;  // written by a thread from a host copy (train/checkpoint/background_save.h)
};

enum class ReduceDtype { kFp32, kParam };

struct DistributedConfig {
  Strategy strategy = Strategy::kDdp;
  Backend backend = Backend::kAuto;
  int64_t bucket_size = 0;           // bytes of gradients per all-reduce / reduce-scatter bucket
  bool cpu_offload = false;          // optimizer state (zero3: also the parameter shards) in host memory
  ReduceDtype reduce_dtype = ReduceDtype::kFp32;
  // Tensor parallelism (Megatron layers): ranks per group that split each block's matrices, and
  // whether the norms and dropout between them run on a slice of the sequence.
  int64_t tensor_parallel = 1;
  bool sequence_parallel = false;
  // Pipeline parallelism: stages that each hold consecutive blocks (the embeddings on the first,
  // the head and loss on the last), or with virtual stages several groups of them (interleaved);
  // the blocks' boundaries (stages x virtual stages + 1 numbers from 0 to the model's layers;
  // empty: balanced by parameter count) and the micro-batch schedule.
  int64_t pipeline_parallel = 1;
  int64_t pipeline_virtual_stages = 1;
  std::vector<double> pipeline_stages;
  PipelineSchedule pipeline_schedule = PipelineSchedule::k1f1b;
  // Time budgets of a collective, in seconds, by phase.
  double timeout = 0;                // training steps
  double startup_timeout = 0;        // rendezvous and the first collectives
  double data_timeout = 0;           // data preparation (tokenizing, the token cache)
  double eval_timeout = 0;
  double checkpoint_timeout = 0;
};

// An MLflow tracking server, reached over its REST API (lib/track/mlflow_*).
struct MlflowConfig {
  std::string tracking_uri;  // http(s)://host:port; empty: no server
  std::string experiment;    // created when missing
  std::string run_name;
  double flush_every = 0;    // seconds between batches of metrics
  double timeout = 0;        // seconds for one request
};

struct LoggingConfig {
  LogLevel level = LogLevel::kInfo;
  // Where the metrics go: jsonl (metrics.jsonl), tensorboard (the event file), mlflow.
  std::vector<std::string> report_to;
  MlflowConfig mlflow;
};

// A user callback (`callbacks:`; train/report/user_callbacks.h): a plugin, a shared library speaking
// include/hftrain/plugin.h, or a shell command run on some of the run's events.
struct CallbackSpec {
  std::string plugin;                       // a shared library's path, or
  std::string command;                      // a shell command (sh -c)
  std::map<std::string, std::string> args;  // plugin: handed over as a JSON object of strings
  bool all_ranks = false;                   // plugin: on every rank (default: rank 0 only)
  std::vector<std::string> on;              // command: its events (begin, evaluate, save, end)
  bool background = true;                   // command: training goes on while it runs
  bool required = false;                    // command: its failure stops the run
  bool operator==(const CallbackSpec&) const = default;
};
// The events a command callback may run on, and those it runs on when `on` is not given.
inline const std::vector<std::string> kCallbackEvents = {"begin", "evaluate", "save", "end"};

struct Config {
  RunConfig run;
  ModelConfig model;
  TokenizerConfig tokenizer;
  DataConfig data;
  OptimizerConfig optimizer;
  SchedulerConfig scheduler;
  TrainerConfig trainer;
  CheckpointConfig checkpoint;
  DistributedConfig distributed;
  LoggingConfig logging;
  PeftConfig peft;
  PreferenceConfig preference;
  DebugConfig debug;
  std::vector<CallbackSpec> callbacks;
};

}  // namespace hftrain::config
