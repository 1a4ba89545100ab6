// Cross-field rules: each names every key involved and where its value came from.
#include <algorithm>
#include <string>
#include <vector>
#include <utility>

#include "config/validate.h"
#include "util/strings.h"

namespace hftrain::config {
namespace {

std::string from(const Node& tree, const std::string& dotted) {
  const Node* n = tree.find_path(util::split(dotted, '.'));
  return n ? n->origin().describe() : "default";
}

// A mixture's weights: every training source has one or none does; not all zero; validation
// sources are evaluated one by one and take none.
void check_source_weights(const DataConfig& d, const Node& tree, Diagnostics& diags) {
  size_t weighted = 0;
  double total = 0;
  for (const auto& s : d.train) {
    if (s.weight) ++weighted, total += *s.weight;
  }
  if (weighted > 0 && weighted < d.train.size()) {
    std::string missing;
    for (const auto& s : d.train) {
      if (!s.weight) missing += (missing.empty() ? "" : ", ") + s.path;
    }
    diags.add(from(tree, "data.train"),
              "`data.train` gives weights to " + std::to_string(weighted) + " of its " +
                  std::to_string(d.train.size()) + " sources; without a weight: " + missing,
              "give every source a weight (relative shares of the samples), or none (each source in proportion "
              "to its size)");
  } else if (weighted > 0 && total == 0) {
    diags.add(from(tree, "data.train"), "every weight in `data.train` is 0, so no source would be drawn from",
              "give at least one source a weight above 0");
  }
  for (const auto& s : d.validation) {
    if (s.weight) {
      diags.add(from(tree, "data.validation"), "`data.validation` source " + s.path + " has a weight",
                "validation sources are each evaluated in full: remove the weight");
      break;
    }
  }
}

// logging.report_to: known trackers, each once; mlflow needs a server.
void check_report_to(const LoggingConfig& l, const Node& tree, Diagnostics& diags) {
  std::vector<std::string> seen;
  for (const auto& r : l.report_to) {
    if (r == "wandb") {
      diags.add(from(tree, "logging.report_to"),
                "`logging.report_to` has wandb: hftrain does not write Weights & Biases runs (an offline run is "
                "protobuf records in wandb's own framing, with no published format; only wandb's own client writes it)",
                "report to mlflow, tensorboard or jsonl; `wandb sync --sync-tensorboard` uploads the TensorBoard event "
                "file of a run directory");
    } else if (r != "jsonl" && r != "tensorboard" && r != "mlflow") {
      diags.add(from(tree, "logging.report_to"), "`logging.report_to` has `" + r + "`, which is not a tracker",
                "choose from jsonl, tensorboard, mlflow");
    } else if (std::find(seen.begin(), seen.end(), r) != seen.end()) {
      diags.add(from(tree, "logging.report_to"), "`logging.report_to` names " + r + " twice", "name it once");
    }
    seen.push_back(r);
  }
  const bool mlflow = std::find(seen.begin(), seen.end(), "mlflow") != seen.end();
  const std::string& uri = l.mlflow.tracking_uri;
  if (mlflow && uri.empty()) {
    diags.add(from(tree, "logging.mlflow.tracking_uri"), "`logging.report_to` has mlflow but no tracking server is set",
              "set logging.mlflow.tracking_uri=http://HOST:5000 (or MLFLOW_TRACKING_URI)");
  } else if (mlflow && uri.rfind("http://", 0) != 0 && uri.rfind("https://", 0) != 0) {
    diags.add(from(tree, "logging.mlflow.tracking_uri"),
              "`logging.mlflow.tracking_uri` is " + uri +
                  ": hftrain talks to a tracking server over HTTP, not to a file store or a database",
              "start `mlflow server --backend-store-uri " + uri + "` and point tracking_uri at it (http://HOST:5000)");
  }
}

}  // namespace

namespace {

// trainer.param_dtype=bf16 (train/step/master_weights.h): what it does not support yet, refused here
// with the reason rather than trained wrongly.
void check_param_dtype(const Config& c, const Node& tree, Diagnostics& diags) {
  if (c.trainer.param_dtype != ParamDtype::kBf16) return;
  const std::string key = "trainer.param_dtype";
  if (c.trainer.precision != Precision::kBf16) {
    diags.add(from(tree, key), "`trainer.param_dtype` is bf16, which computes in bf16, but trainer.precision is " +
                                   std::string(c.trainer.precision == Precision::kFp16 ? "fp16" : "fp32"),
              "set trainer.precision=bf16 too, or trainer.param_dtype=fp32");
  }
  const auto refuse = [&](const std::string& what, const std::string& hint) {
    diags.add(from(tree, key), "`trainer.param_dtype=bf16` does not work with " + what + " yet: the fp32 master "
                                   "weights of that path are not written",
              hint);
  };
  if (c.distributed.strategy == Strategy::kZero3 || c.distributed.strategy == Strategy::kHybrid) {
    refuse("distributed.strategy " + std::string(c.distributed.strategy == Strategy::kHybrid ? "hybrid" : "zero3"),
           "use distributed.strategy=ddp, zero1 or zero2, or trainer.param_dtype=fp32 with bf16 autocast "
           "(trainer.precision=bf16)");
  }
  if (c.distributed.cpu_offload) refuse("distributed.cpu_offload", "set distributed.cpu_offload=false");
  if (c.distributed.tensor_parallel > 1 || c.distributed.pipeline_parallel > 1) {
    refuse("tensor or pipeline parallelism", "set distributed.tensor_parallel=1 and distributed.pipeline_parallel=1, "
                                             "or trainer.param_dtype=fp32");
  }
  if (c.model.arch == ModelArch::kBert) {
    refuse("an encoder (model.arch=bert)", "set trainer.param_dtype=fp32 with trainer.precision=bf16");
  }
}

}  // namespace

// Preference training: decoders, one model per rank, a reference that exists.
void check_preference(const Config& c, const Node& tree, Diagnostics& diags) {
  const PreferenceConfig& p = c.preference;
  if (p.objective == PreferenceObjective::kNone) return;
  if (c.model.arch == ModelArch::kBert) {
    diags.add(from(tree, "preference.objective"),
              "`preference.objective` trains a decoder on its answers' log-probabilities; model.arch=bert is an "
              "encoder",
              "train a decoder (model.arch=gpt2 or llama, or model.from a Hugging Face decoder)");
  }
  if (c.distributed.tensor_parallel > 1 || c.distributed.pipeline_parallel > 1) {
    diags.add(from(tree, "preference.objective"),
              "`preference.objective` scores each pair's whole sequences on one rank; tensor and pipeline "
              "parallelism split them and are not supported with it yet",
              "set distributed.tensor_parallel=1 and distributed.pipeline_parallel=1 (data parallelism and the zero "
              "strategies work)");
  }
  if (p.objective == PreferenceObjective::kKto && c.trainer.micro_batch_size < 2) {
    diags.add(from(tree, "trainer.micro_batch_size"),
              "`preference.objective` is kto, whose KL point pairs each prompt with another row's answer of the "
              "micro-batch; a micro-batch of 1 has no other row",
              "set trainer.micro_batch_size to 2 or more");
  }
  if (p.objective == PreferenceObjective::kKto && p.reference == PreferenceReference::kPrecomputed) {
    diags.add(from(tree, "preference.reference"),
              "`preference.reference` is precomputed, but KTO's KL rows pair prompts and answers anew in each "
              "micro-batch, which a pass before training cannot know",
              "set preference.reference=copy (or auto; adapters_off with LoRA)");
  }
  if (p.reference == PreferenceReference::kAdaptersOff && c.peft.method != PeftMethod::kLora) {
    diags.add(from(tree, "preference.reference"),
              "`preference.reference` is adapters_off, but there are no adapters to turn off (peft.method is not "
              "lora)",
              "set peft.method=lora, or preference.reference=copy (or auto)");
  }
  const bool referenced = p.objective == PreferenceObjective::kDpo || p.objective == PreferenceObjective::kKto;
  const bool adapters_off =
      referenced && c.peft.method == PeftMethod::kLora &&
      (p.reference == PreferenceReference::kAuto || p.reference == PreferenceReference::kAdaptersOff);
  if (adapters_off && c.peft.from &&
      (c.distributed.strategy == Strategy::kZero3 || c.distributed.strategy == Strategy::kHybrid)) {
    diags.add(from(tree, "peft.from"),
              "DPO's reference for a continued adapter (peft.from) swaps the adapter's starting values in for each "
              "reference forward, which the parameter-sharding strategies (zero3, hybrid) do not allow",
              "set preference.reference=precomputed (or copy), or distributed.strategy=zero2");
  }
  if (referenced && c.peft.method == PeftMethod::kLora &&
      !c.peft.modules_to_save.empty() && p.reference != PreferenceReference::kCopy &&
      p.reference != PreferenceReference::kPrecomputed) {
    diags.add(from(tree, "peft.modules_to_save"),
              "`peft.modules_to_save` trains whole modules that turning the adapters off does not restore, so "
              "the reference would not be the starting model",
              "set preference.reference=copy, or leave peft.modules_to_save empty");
  }
}

void check_cross_field_rules(const Config& c, const Node& tree, Diagnostics& diags) {
  check_source_weights(c.data, tree, diags);
  check_preference(c, tree, diags);
  check_report_to(c.logging, tree, diags);
  if (c.model.arch != ModelArch::kBert && c.model.task != config::Task::kSequenceClassification) {
    diags.add(from(tree, "model.task"), "`model.task` is token_classification, which an encoder (model.arch=bert) does",
              "unset model.task, or use model.arch=bert");
  }
  if (c.model.arch != ModelArch::kLlama && c.model.hf_family != config::HfFamily::kAuto) {
    diags.add(from(tree, "model.hf_family"),
              "`model.hf_family` names the Hugging Face family of a llama-block export, but "
              "model.arch is not llama",
              "unset model.hf_family, or use model.arch=llama");
  }
  if (c.model.arch != ModelArch::kBert && c.model.encoder != config::Encoder::kBert) {
    diags.add(from(tree, "model.encoder"),
              "`model.encoder` chooses a BERT-style encoder's family, but model.arch is not bert",
              "unset model.encoder, or use model.arch=bert");
  }
  if (c.model.arch == ModelArch::kBert) {
    // Classification reads labelled files by path with data.*'s columns: per-source fields would be ignored.
    for (const auto* list : {&c.data.train, &c.data.validation}) {
      for (const auto& s : *list) {
        if (!s.plain()) {
          diags.add(from(tree, list == &c.data.train ? "data.train" : "data.validation"),
                    "classification (model.arch=bert) takes data sources as plain paths, but " + s.path +
                        " sets more (weight, name, format or fields)",
                    "give the path alone, and the columns in data.text_field / data.label_field");
          break;
        }
      }
    }
  }
  if (!c.trainer.max_steps && !c.trainer.max_epochs && !c.trainer.max_tokens) {
    diags.add("",
              "none of `trainer.max_steps`, `trainer.max_epochs` or `trainer.max_tokens` is set, so training would "
              "never stop",
              "set one, e.g. trainer.max_steps=1000");
  }
  if (c.trainer.max_steps && c.scheduler.warmup_steps >= *c.trainer.max_steps) {
    diags.add(from(tree, "scheduler.warmup_steps"),
              "`scheduler.warmup_steps` (" + std::to_string(c.scheduler.warmup_steps) +
                  ") must be shorter than training, `trainer.max_steps` (" +
                  std::to_string(*c.trainer.max_steps) + ", from " + from(tree, "trainer.max_steps") + ")",
              "lower the warmup or raise trainer.max_steps");
  }
  // Evaluations that rank (every trainer.eval_every steps, at each epoch's end), and any at all.
  const bool ranks = c.trainer.eval_every > 0 || c.trainer.eval_on_epoch_end;
  const std::vector<std::pair<const char*, bool>> need_ranking = {
      {"checkpoint.keep_best", c.checkpoint.keep_best},
      {"trainer.load_best_model_at_end", c.trainer.load_best_model_at_end},
      {"trainer.early_stopping_patience", c.trainer.early_stopping_patience.has_value()}};
  for (const auto& [key, on] : need_ranking) {
    if (!on || ranks) continue;
    diags.add(from(tree, key),
              "`" + std::string(key) + "` needs evaluation, but `trainer.eval_every` is 0 (from " +
                  from(tree, "trainer.eval_every") + ") and `trainer.eval_on_epoch_end` is false",
              "set trainer.eval_every or trainer.eval_on_epoch_end=true, or drop " + std::string(key));
  }
  if (c.trainer.load_best_model_at_end && !c.checkpoint.keep_best) {
    diags.add(from(tree, "trainer.load_best_model_at_end"),
              "`trainer.load_best_model_at_end` loads the best evaluation's checkpoint, which only "
              "`checkpoint.keep_best` saves and keeps",
              "set checkpoint.keep_best=true");
  }
  const std::vector<std::pair<const char*, bool>> evaluate = {
      {"checkpoint.keep_best", c.checkpoint.keep_best},
      {"trainer.eval_every", c.trainer.eval_every > 0},
      {"trainer.eval_on_start", c.trainer.eval_on_start},
      {"trainer.eval_on_epoch_end", c.trainer.eval_on_epoch_end}};
  for (const auto& [key, on] : evaluate) {
    if (!on || !c.data.validation.empty() || c.data.validation_fraction > 0) continue;
    diags.add(from(tree, key), "`" + std::string(key) + "` evaluates, but `data.validation` is empty",
              "name validation data in data.validation (or set data.validation_fraction)");
  }
  if (c.model.n_head > 0 && !c.model.head_dim && c.model.d_model % c.model.n_head != 0) {
    diags.add(from(tree, "model.d_model"),
              "`model.d_model` (" + std::to_string(c.model.d_model) + ") is not divisible by `model.n_head` (" +
                  std::to_string(c.model.n_head) + ", from " + from(tree, "model.n_head") + ")",
              "pick a head count that divides the hidden size, or set model.head_dim");
  }
  if (c.model.arch != ModelArch::kLlama) {
    // The llama-family options, each with whether it is set away from its default.
    const std::pair<const char*, bool> llama_only[] = {
        {"model.head_dim", c.model.head_dim.has_value()},
        {"model.qk_norm", c.model.qk_norm != QkNorm::kNone},
        {"model.norm_placement", c.model.norm_placement != NormPlacement::kPre},
        {"model.partial_rotary_factor", c.model.partial_rotary_factor != 1.0},
        {"model.fused_projections", c.model.fused_projections},
        {"model.activation", c.model.activation != Activation::kSilu},
        {"model.norm_unit_offset", c.model.norm_unit_offset},
        {"model.scale_embeddings", c.model.scale_embeddings},
        {"model.query_pre_attn_scalar", c.model.query_pre_attn_scalar.has_value()},
        {"model.attn_logit_softcapping", c.model.attn_logit_softcapping.has_value()},
        {"model.final_logit_softcapping", c.model.final_logit_softcapping.has_value()},
        {"model.sliding_window", c.model.sliding_window.has_value()},
        {"model.sliding_window_pattern", c.model.sliding_window_pattern != 0},
        {"model.rope_local_theta", c.model.rope_local_theta.has_value()},
        {"model.n_experts", c.model.n_experts != 0}};
    for (const auto& [key, set] : llama_only) {
      if (!set) continue;
      diags.add(from(tree, key), "`" + std::string(key) + "` is a llama-family option, but model.arch is not llama",
                "unset " + std::string(key) + ", or use model.arch=llama");
      break;
    }
  } else if (!c.model.sliding_window) {
    const std::pair<const char*, bool> sliding_only[] = {
        {"model.sliding_window_pattern", c.model.sliding_window_pattern != 0},
        {"model.rope_local_theta", c.model.rope_local_theta.has_value()}};
    for (const auto& [key, set] : sliding_only) {
      if (!set) continue;
      diags.add(from(tree, key),
                "`" + std::string(key) + "` describes the sliding layers, but `model.sliding_window` is unset",
                "set model.sliding_window, or unset " + std::string(key));
    }
  }
  if (c.model.router_aux_loss_coef > 0 && c.model.n_experts == 0) {
    diags.add(from(tree, "model.router_aux_loss_coef"),
              "`model.router_aux_loss_coef` weighs the routers' load-balancing loss, but the model has no experts "
              "(`model.n_experts` is 0)",
              "unset model.router_aux_loss_coef, or set model.n_experts");
  }
  if (c.model.shared_expert_d_ff > 0 && c.model.n_experts == 0) {
    diags.add(from(tree, "model.shared_expert_d_ff"),
              "`model.shared_expert_d_ff` sizes the shared expert of a mixture of experts, but the model has no "
              "experts (`model.n_experts` is 0)",
              "unset model.shared_expert_d_ff, or set model.n_experts");
  }
  if (c.model.n_experts > 0 && c.model.experts_per_token > c.model.n_experts) {
    diags.add(from(tree, "model.experts_per_token"),
              "`model.experts_per_token` (" + std::to_string(c.model.experts_per_token) +
                  ") exceeds `model.n_experts` (" + std::to_string(c.model.n_experts) + ")",
              "route each token to at most model.n_experts experts");
  }
  if (c.model.n_kv_head && c.model.n_head % *c.model.n_kv_head != 0) {
    diags.add(from(tree, "model.n_kv_head"), "`model.n_head` (" + std::to_string(c.model.n_head) +
                                                 ") is not a multiple of `model.n_kv_head` (" +
                                                 std::to_string(*c.model.n_kv_head) + ")",
              "each key/value head serves a whole number of query heads");
  }
  if (c.model.arch == ModelArch::kLlama && c.model.n_head > 0) {
    // RoPE rotates pairs: head_dim x partial_rotary_factor must be even (an odd head is fine when the
    // factor leaves it so).
    const int64_t head = c.model.head_dim.value_or(c.model.d_model / c.model.n_head);
    const auto rotary = static_cast<int64_t>(static_cast<double>(head) * c.model.partial_rotary_factor);
    if (rotary < 2 || rotary % 2 != 0) {
      const std::string key = c.model.partial_rotary_factor != 1.0 ? "model.partial_rotary_factor"
                              : c.model.head_dim                   ? "model.head_dim"
                                                                   : "model.d_model";
      diags.add(from(tree, key),
                "llama's rotary embeddings rotate pairs, but they would rotate " + std::to_string(rotary) +
                    " dimensions of each head (head size " + std::to_string(head) +
                    (c.model.head_dim ? "" : " = d_model / n_head") + ", partial_rotary_factor " +
                    std::to_string(c.model.partial_rotary_factor).substr(0, 6) + ")",
                "pick sizes (or a factor) that leave an even number of rotated dimensions");
    }
  }
  if (c.data.seq_len > c.model.max_seq_len) {
    diags.add(from(tree, "data.seq_len"),
              "`data.seq_len` (" + std::to_string(c.data.seq_len) + ") exceeds `model.max_seq_len` (" +
                  std::to_string(c.model.max_seq_len) + ", from " + from(tree, "model.max_seq_len") + ")",
              "shorten data.seq_len or raise model.max_seq_len");
  }
  if (c.optimizer.nesterov && c.optimizer.momentum == 0) {
    diags.add(from(tree, "optimizer.nesterov"), "`optimizer.nesterov` needs `optimizer.momentum` > 0",
              "set optimizer.momentum, e.g. 0.9");
  }
  check_param_dtype(c, tree, diags);
  if (c.peft.quantize_base != QuantizeBase::kNone && c.peft.method != PeftMethod::kLora) {
    diags.add(from(tree, "peft.quantize_base"),
              "`peft.quantize_base` quantizes the frozen base of a LoRA run, but peft.method is not lora",
              "set peft.method=lora (with model.from), or peft.quantize_base=none");
  }
  if (c.peft.quantize_base != QuantizeBase::kNone && c.model.arch == ModelArch::kBert) {
    diags.add(from(tree, "peft.quantize_base"),
              "`peft.quantize_base` quantizes a decoder's base (gpt2, llama) as it is read; a BERT classifier's base "
              "is not quantized",
              "set peft.quantize_base=none: LoRA on BERT trains on its fp32 base");
  }
  const auto& sc = c.scheduler;
  if (c.optimizer.name == OptimizerName::kScheduleFreeAdamW &&
      (sc.name != SchedulerName::kConstant || sc.warmup_steps > 0)) {
    diags.add(from(tree, sc.name != SchedulerName::kConstant ? "scheduler.name" : "scheduler.warmup_steps"),
              "`optimizer.name: schedule_free_adamw` replaces the learning-rate schedule, but the schedule is " +
                  std::string(sc.name != SchedulerName::kConstant ? "not constant" : "warmed up"),
              "set scheduler.name=constant and scheduler.warmup_steps=0; warm up with "
              "optimizer.schedule_free.warmup_steps");
  }
  const EmaConfig& ema = c.trainer.ema;
  if (ema.enabled && c.optimizer.name == OptimizerName::kScheduleFreeAdamW) {
    diags.add(from(tree, "trainer.ema.enabled"),
              "`trainer.ema.enabled` keeps an average of the weights, but optimizer.name is schedule_free_adamw, which "
              "evaluates and keeps its own average of them",
              "set trainer.ema.enabled=false (schedule_free_adamw's average is what evaluations and final/ see), or "
              "choose another optimizer");
  }
  const OptimizerName o = c.optimizer.name;
  const bool whole_state = o == OptimizerName::kAdafactor || o == OptimizerName::kGaloreAdamW ||
                           o == OptimizerName::kApolloAdamW || o == OptimizerName::kMuon;
  if (ema.enabled && whole_state && c.distributed.strategy == Strategy::kZero1) {
    diags.add(from(tree, "trainer.ema.enabled"),
              "`trainer.ema.enabled` does not go with distributed.strategy=zero1 for this optimizer: zero1 "
              "partitions its state by whole parameters, and the average would follow only those each rank steps",
              "use distributed.strategy=ddp with trainer.ema, or set trainer.ema.enabled=false");
  }
  if (ema.enabled && ema.min_decay > ema.decay) {
    diags.add(from(tree, "trainer.ema.min_decay"),
              "`trainer.ema.min_decay` exceeds `trainer.ema.decay` (from " + from(tree, "trainer.ema.decay") + ")",
              "lower trainer.ema.min_decay (0 lets the warm-up start from 0)");
  }
  if (sc.warmup_ratio && sc.warmup_steps > 0) {
    diags.add(from(tree, "scheduler.warmup_ratio"),
              "`scheduler.warmup_ratio` and `scheduler.warmup_steps` are both set (the steps from " +
                  from(tree, "scheduler.warmup_steps") + ")",
              "set only one: the ratio of the run's steps, or a number of steps");
  }
  if (sc.warmup_ratio && c.optimizer.name == OptimizerName::kScheduleFreeAdamW) {
    diags.add(
        from(tree, "scheduler.warmup_ratio"),
        "`optimizer.name: schedule_free_adamw` replaces the learning-rate schedule, but the schedule is warmed up",
        "unset scheduler.warmup_ratio; warm up with optimizer.schedule_free.warmup_steps");
  }
  if (sc.min_lr && sc.min_lr_rate) {
    diags.add(from(tree, "scheduler.min_lr"),
              "`scheduler.min_lr` and `scheduler.min_lr_rate` are both set (the rate from " +
                  from(tree, "scheduler.min_lr_rate") + ")",
              "set only one");
  }
  if (sc.name == SchedulerName::kCosineWithMinLr && !sc.min_lr && !sc.min_lr_rate) {
    diags.add(from(tree, "scheduler.name"), "`cosine_with_min_lr` needs `scheduler.min_lr` or `scheduler.min_lr_rate`",
              "e.g. scheduler.min_lr_rate=0.1");
  }
  if (sc.name == SchedulerName::kWarmupStableDecay && !sc.wsd.decay_steps) {
    diags.add(from(tree, "scheduler.name"), "`warmup_stable_decay` needs `scheduler.wsd.decay_steps`",
              "e.g. scheduler.wsd.decay_steps=1000");
  }
  if (sc.name == SchedulerName::kPolynomial && sc.lr_end >= c.optimizer.lr) {
    diags.add(from(tree, "scheduler.lr_end"), "`scheduler.lr_end` must be smaller than `optimizer.lr` (from " +
                                                  from(tree, "optimizer.lr") + ") for a polynomial decay");
  }
  if ((c.tokenizer.type == TokenizerType::kBpe || c.tokenizer.type == TokenizerType::kHf) &&
      !c.tokenizer.path) {
    diags.add(from(tree, "tokenizer.type"), "`tokenizer.type` needs `tokenizer.path` (a tokenizer.json)",
              "set tokenizer.path, or use tokenizer.type=byte");
  }
}

}  // namespace hftrain::config
