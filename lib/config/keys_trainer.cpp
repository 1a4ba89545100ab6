// Config keys of the training loop (trainer.*): steps, precision, evaluation, the best model, EMA
// weights and what a bad step does. Each key enters together with the code that reads it (see keys.cpp).
#include "config/keys.h"

namespace hftrain::config {

void add_trainer_keys(Schema& s) {
  s.section("trainer", "The training loop.", ResumeChange::kSafe);
  s.add("trainer.max_steps", Type::kInt, HFTRAIN_FIELD(trainer.max_steps))
      .nullable().min(1).unit("steps").doc("Stop after this many optimizer steps.");
  s.add("trainer.max_epochs", Type::kInt, HFTRAIN_FIELD(trainer.max_epochs))
      .nullable().min(1).unit("epochs").doc("Stop after this many passes over the training data.");
  s.add("trainer.micro_batch_size", Type::kInt, HFTRAIN_FIELD(trainer.micro_batch_size))
      .on_resume(ResumeChange::kDataOrder)
      .def("8").min(1).unit("sequences").doc("Sequences per forward/backward pass, per process.");
  s.add("trainer.grad_accum_steps", Type::kInt, HFTRAIN_FIELD(trainer.grad_accum_steps))
      .on_resume(ResumeChange::kDataOrder)
      .def("1").min(1).max(65536).unit("micro-batches").doc("Micro-batches accumulated per optimizer step.");
  s.add("trainer.max_grad_norm", Type::kFloat, HFTRAIN_FIELD(trainer.max_grad_norm))
      .on_resume(ResumeChange::kTraining)
      .def("1.0").min(0).allow_inf()
      .doc("Clip the global gradient norm to this; .inf only measures and logs it.");
  s.add("trainer.precision", Type::kChoice, HFTRAIN_FIELD(trainer.precision))
      .on_resume(ResumeChange::kTraining)
      .choices({"fp32", "bf16", "fp16"}).def("fp32").doc("Compute precision.");
  s.add("trainer.param_dtype", Type::kChoice, HFTRAIN_FIELD(trainer.param_dtype))
      .on_resume(ResumeChange::kTraining)
      .choices({"fp32", "bf16"}).def("fp32")
      .doc("How the model's parameters are stored while training. fp32: fp32 weights, bf16/fp16 compute by "
           "autocast (trainer.precision). bf16 (needs trainer.precision=bf16): the weights, their gradients and the "
           "residual stream in bf16 with no autocast, norms computing their statistics in fp32, and fp32 master "
           "weights that the optimizer steps and writes back to the bf16 weights after each update (gradients "
           "accumulated in fp32 over micro-batches on one process). Checkpoints and exports hold the fp32 masters, "
           "so a checkpoint resumes exactly under either setting. With LoRA the frozen base is stored in bf16 and the "
           "adapters get masters. One process, ddp, or zero1/2 (their masters sharded with the optimizer state); "
           "refused with zero3, hybrid, tensor or pipeline parallelism, cpu_offload and encoders.");
  s.add("trainer.log_every", Type::kInt, HFTRAIN_FIELD(trainer.log_every))
      .def("10").min(1).unit("steps").doc("Log metrics every N steps.");
  s.add("trainer.eval_every", Type::kInt, HFTRAIN_FIELD(trainer.eval_every))
      .def("0").min(0).unit("steps").doc("Evaluate every N steps; 0 never.");
  s.add("trainer.max_tokens", Type::kCount, HFTRAIN_FIELD(trainer.max_tokens))
      .nullable().min(1).unit("tokens").doc("Stop after this many training tokens (e.g. 10M, 2B).");
  s.add("trainer.eval_batches", Type::kInt, HFTRAIN_FIELD(trainer.eval_batches))
      .nullable().min(1).doc("Batches per evaluation; unset: the whole validation split.");
  s.add("trainer.label_smoothing", Type::kFloat, HFTRAIN_FIELD(trainer.label_smoothing))
      .on_resume(ResumeChange::kTraining)
      .def("0.0").min(0).max(0.99).doc("Label smoothing of the cross-entropy loss.");
  s.add("trainer.tf32", Type::kBool, HFTRAIN_FIELD(trainer.tf32))
      .on_resume(ResumeChange::kTraining)
      .def("false").doc("CUDA: allow TF32 tensor cores for fp32 matrix multiplies.");
  s.add("trainer.device", Type::kChoice, HFTRAIN_FIELD(trainer.device))
      .choices({"auto", "cpu", "cuda"}).def("auto").doc("Where to train; auto picks CUDA when a GPU is visible.");
  s.add("trainer.neftune_noise_alpha", Type::kFloat, HFTRAIN_FIELD(trainer.neftune_noise_alpha))
      .def("0.0")
      .min(0)
      .max(1000)
      .doc("NEFTune (the Trainer's neftune_noise_alpha): uniform noise in +-alpha / sqrt(seq_len x d_model) added to "
           "the token embeddings of training batches, never at evaluation; 0: off.");
  s.add("trainer.deterministic", Type::kBool, HFTRAIN_FIELD(trainer.deterministic))
      .def("false")
      .doc("Deterministic kernels only: ATen's deterministic algorithms (an operation without one warns, naming "
           "itself), cuBLAS's fixed workspace, and attention kernels whose backward is deterministic.");
  s.add("trainer.ema.enabled", Type::kBool, HFTRAIN_FIELD(trainer.ema.enabled))
      .on_resume(ResumeChange::kTraining)
      .def("false")
      .doc("Keep an exponential moving average of the trained weights in fp32 (as diffusers' EMAModel), sharded "
           "with the optimizer state and saved in checkpoints; evaluations and final/ use it (trainer.ema.evaluate, "
           "trainer.ema.export). Turned on at a resume, it starts from the resumed weights; turned off, the saved "
           "average is dropped.");
  s.add("trainer.ema.decay", Type::kFloat, HFTRAIN_FIELD(trainer.ema.decay))
      .on_resume(ResumeChange::kTraining)
      .def("0.9999")
      .min(0)
      .max(1)
      .doc("The average's largest decay: each update keeps this much of it and takes the rest from the weights.");
  s.add("trainer.ema.min_decay", Type::kFloat, HFTRAIN_FIELD(trainer.ema.min_decay))
      .on_resume(ResumeChange::kTraining)
      .def("0.0")
      .min(0)
      .max(1)
      .doc("The smallest decay once warm-up has begun (after trainer.ema.start_step).");
  s.add("trainer.ema.every", Type::kInt, HFTRAIN_FIELD(trainer.ema.every))
      .on_resume(ResumeChange::kTraining)
      .def("1")
      .min(1)
      .unit("steps")
      .doc("Update the average after every this many optimizer steps; the warm-up counts updates.");
  s.add("trainer.ema.start_step", Type::kInt, HFTRAIN_FIELD(trainer.ema.start_step))
      .on_resume(ResumeChange::kTraining)
      .def("0")
      .min(0)
      .unit("updates")
      .doc("The first this many updates, and one more, copy the weights (diffusers' update_after_step).");
  s.add("trainer.ema.warmup", Type::kChoice, HFTRAIN_FIELD(trainer.ema.warmup))
      .on_resume(ResumeChange::kTraining)
      .choices({"inverse", "power", "none"})
      .def("inverse")
      .doc("How the decay grows towards trainer.ema.decay with n, the updates after start_step + 1: inverse "
           "(1 + n) / (10 + n) (diffusers' default, TensorFlow's num_updates), power 1 - (1 + n / inv_gamma)^-power "
           "(diffusers' use_ema_warmup), none the decay from the first update on.");
  s.add("trainer.ema.inv_gamma", Type::kFloat, HFTRAIN_FIELD(trainer.ema.inv_gamma))
      .on_resume(ResumeChange::kTraining)
      .def("1.0")
      .min(1e-9)
      .max(1e12)
      .doc("trainer.ema.warmup=power: the warm-up's time scale, in updates.");
  s.add("trainer.ema.power", Type::kFloat, HFTRAIN_FIELD(trainer.ema.power))
      .on_resume(ResumeChange::kTraining)
      .def("0.6666666666666666")
      .min(1e-9)
      .max(100)
      .doc("trainer.ema.warmup=power: the exponent (2/3 reaches 0.999 near 31.6k updates, 3/4 near 10k).");
  s.add("trainer.ema.evaluate", Type::kBool, HFTRAIN_FIELD(trainer.ema.evaluate))
      .def("true")
      .doc("Evaluations (and so the best model and early stopping) measure the average instead of the weights "
           "being trained.");
  s.add("trainer.ema.export", Type::kBool, HFTRAIN_FIELD(trainer.ema.export_final))
      .def("true")
      .doc("final/ (and run.export_hf's final-hf/) holds the average instead of the last step's weights; "
           "checkpoints always hold the trained weights, the average beside the optimizer state.");
  s.add("trainer.early_stopping_patience", Type::kInt, HFTRAIN_FIELD(trainer.early_stopping_patience))
      .nullable().min(1).unit("evaluations").doc("Stop after this many evaluations without improvement; unset: never.");
  s.add("trainer.early_stopping_threshold", Type::kFloat, HFTRAIN_FIELD(trainer.early_stopping_threshold))
      .def("0.0")
      .min(0)
      .doc("trainer.metric_for_best_model must improve by more than this to count as an improvement.");
  s.add("trainer.metric_for_best_model", Type::kString, HFTRAIN_FIELD(trainer.metric_for_best_model))
      .def("eval_loss")
      .doc(
          "The evaluation figure that ranks evaluations (any eval_* name metrics.jsonl logs: eval_loss, eval_accuracy, "
          "eval_f1, eval/<source>/loss, eval_rewards/accuracies): the best checkpoint (checkpoint.keep_best), early "
          "stopping and trainer.load_best_model_at_end follow it.");
  s.add("trainer.greater_is_better", Type::kBool, HFTRAIN_FIELD(trainer.greater_is_better))
      .nullable()
      .doc("Whether a higher trainer.metric_for_best_model is better; unset: false for a name ending in 'loss' "
           "(the Trainer's rule) or 'ppl', true otherwise.");
  s.add("trainer.load_best_model_at_end", Type::kBool, HFTRAIN_FIELD(trainer.load_best_model_at_end))
      .def("false")
      .doc("final/ (and run.export_hf's final-hf/) holds the best evaluation's weights instead of the last step's; "
           "needs evaluations and keeps the best checkpoint (checkpoint.keep_best).");
  s.add("trainer.eval_on_start", Type::kBool, HFTRAIN_FIELD(trainer.eval_on_start))
      .def("false").doc("Evaluate once before the first step (step 0), as the Trainer's eval_on_start.");
  s.add("trainer.eval_on_epoch_end", Type::kBool, HFTRAIN_FIELD(trainer.eval_on_epoch_end))
      .def("false")
      .doc("Evaluate after the last step of each epoch of the training data (the Trainer's eval_strategy=epoch), "
           "besides every trainer.eval_every steps.");
  s.add("trainer.fp16_init_scale", Type::kFloat, HFTRAIN_FIELD(trainer.fp16_init_scale))
      .on_resume(ResumeChange::kTraining)
      .def("65536.0").min(1).doc("fp16: the initial loss scale.");
  s.add("trainer.fp16_growth_interval", Type::kInt, HFTRAIN_FIELD(trainer.fp16_growth_interval))
      .on_resume(ResumeChange::kTraining)
      .def("2000").min(1).unit("steps").doc("fp16: double the loss scale after this many steps without overflow.");
  s.add("trainer.on_nonfinite", Type::kChoice, HFTRAIN_FIELD(trainer.on_nonfinite))
      .on_resume(ResumeChange::kSafe)
      .choices({"skip", "rollback", "stop"}).def("skip")
      .doc("A step whose loss or gradient norm is NaN or inf (outside fp16's loss scaler, which skips its own "
           "overflows), or a loss spike (trainer.spike.factor): skip drops its update and logs it; rollback reloads "
           "the newest checkpoint before it that verifies and skips the data from there to that step, logging the "
           "sample range; stop saves a checkpoint of the state with the update dropped (when its weights are "
           "finite), names the step and the first non-finite parameter or gradient, and exits 1. skip with adamw "
           "(no spikes, no fp16) is judged on the device, its update dropped by the fused kernel, and reported where "
           "the metrics are read; skip otherwise, and stop, read one value a step from the device; rollback without "
           "spikes reads a flag where the metrics are read.");
  s.add("trainer.max_consecutive_skips", Type::kInt, HFTRAIN_FIELD(trainer.max_consecutive_skips))
      .on_resume(ResumeChange::kSafe)
      .def("10").min(0).unit("steps")
      .doc("Bad steps (skipped or rolled back) in a row after which the run stops as trainer.on_nonfinite=stop "
           "would; 0: never.");
  s.add("trainer.spike.factor", Type::kFloat, HFTRAIN_FIELD(trainer.spike_factor))
      .on_resume(ResumeChange::kSafe)
      .def("0.0").min(0)
      .doc("A step whose loss exceeds this many times the median loss of the last trainer.spike.window good steps "
           "is handled as trainer.on_nonfinite says (skip, rollback or stop); 0: spikes are not judged. Judged "
           "once the window is full; needs one value a step from the device.");
  s.add("trainer.spike.window", Type::kInt, HFTRAIN_FIELD(trainer.spike_window))
      .on_resume(ResumeChange::kSafe)
      .def("100").min(1).unit("steps").doc("The good steps whose median loss a spike is measured against.");
}

}  // namespace hftrain::config
