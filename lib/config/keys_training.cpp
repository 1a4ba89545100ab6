// Config keys of optimizer, scheduler and preference: how it is trained (the loop's own, trainer.*, are
// in keys_trainer.cpp). Each key enters together with the code that reads it (see keys.cpp).
#include "config/keys.h"

namespace hftrain::config {

void add_training_keys(Schema& s) {
  s.section("optimizer", "The optimizer.", ResumeChange::kTraining);
  s.add("optimizer.name", Type::kChoice, HFTRAIN_FIELD(optimizer.name))
      .on_resume(ResumeChange::kImpossible)
      .choices({"adamw", "sgd", "adafactor", "lion", "adamw_8bit", "adagrad", "rmsprop", "schedule_free_adamw",
                "galore_adamw", "muon", "apollo_adamw"})
      .def("adamw")
      .doc(
          "Optimizer. adamw_8bit: AdamW with block-wise 8-bit moments as bitsandbytes' AdamW8bit (blocks of 256, "
          "parameters under 4096 elements keep fp32 moments), about a quarter of adamw's state. adagrad, rmsprop: "
          "torch.optim's rules, weight decay added to the gradient (L2) as theirs. schedule_free_adamw: the "
          "schedulefree package's AdamWScheduleFree, no schedule (scheduler.name=constant; its warmup is "
          "optimizer.schedule_free.warmup_steps); evaluation and saved weights use its averaged point. galore_adamw: "
          "AdamW on gradients projected to a low "
          "rank per weight matrix (optimizer.galore.*), as galore_torch's GaLoreAdamW. muon: Newton-Schulz "
          "orthogonalised momentum for the hidden weight matrices, as torch.optim.Muon (optimizer.muon.*), and AdamW "
          "(optimizer.beta1, beta2, eps) for embeddings, output layer, norms and biases. apollo_adamw: AdamW's "
          "moments of a random low-rank projection of each matrix's gradient scale the whole gradient per channel "
          "or per tensor (optimizer.apollo.*), as apollo-torch's APOLLOAdamW (APOLLO-Mini: rank 1, scale_type "
          "tensor, scale 128).");
  s.add("optimizer.lr", Type::kFloat, HFTRAIN_FIELD(optimizer.lr))
      .def("3.0e-4").min(0).max(10).doc("Peak learning rate.");
  s.add("optimizer.weight_decay", Type::kFloat, HFTRAIN_FIELD(optimizer.weight_decay))
      .def("0.0")
      .min(0)
      .max(10)
      .doc("Weight decay: decoupled (adamw, lion, adafactor), added to the gradient (sgd, adagrad, rmsprop).");
  s.add("optimizer.beta1", Type::kFloat, HFTRAIN_FIELD(optimizer.beta1))
      .nullable().min(0).max(0.999999).doc("adamw and its variants, lion: first-moment decay; unset: 0.9.");
  s.add("optimizer.beta2", Type::kFloat, HFTRAIN_FIELD(optimizer.beta2))
      .nullable()
      .min(0)
      .max(0.999999)
      .doc("adamw and its variants, lion: second-moment decay; unset: 0.999 (adamw), 0.99 (lion).");
  s.add("optimizer.eps", Type::kFloat, HFTRAIN_FIELD(optimizer.eps))
      .def("1.0e-8")
      .min(0)
      .max(1)
      .doc(
          "adamw and its variants, adagrad, rmsprop: added to the denominator (torch.optim.Adagrad's own default is "
          "1e-10).");
  s.add("optimizer.momentum", Type::kFloat, HFTRAIN_FIELD(optimizer.momentum))
      .def("0.0").min(0).max(0.999999).doc("sgd, rmsprop: momentum.");
  s.add("optimizer.nesterov", Type::kBool, HFTRAIN_FIELD(optimizer.nesterov))
      .def("false").doc("sgd: Nesterov momentum (needs optimizer.momentum > 0).");
  s.add("optimizer.no_decay", Type::kStringList, HFTRAIN_FIELD(optimizer.no_decay))
      .def("['*.bias', '*norm.weight', 'embed_*.weight']")
      .doc("Parameter-name globs that get no weight decay: biases, norms and embeddings by default.");
  s.add("optimizer.group_lr", Type::kFloatMap, HFTRAIN_FIELD(optimizer.group_lr))
      .def("{}").min(0).max(10)
      .doc("Own learning rates by parameter-name glob, e.g. {'lm_head.*': 1e-4}; a name may match one glob.");
  s.add("optimizer.group_weight_decay", Type::kFloatMap, HFTRAIN_FIELD(optimizer.group_weight_decay))
      .def("{}").min(0).max(10)
      .doc("Own weight decay by parameter-name glob (overrides optimizer.no_decay for those names).");
  s.add("optimizer.adafactor.beta1", Type::kFloat, HFTRAIN_FIELD(optimizer.adafactor.beta1))
      .nullable().min(0).max(0.999999).doc("adafactor: first-moment decay; unset keeps no first moment.");
  s.add("optimizer.adafactor.decay_rate", Type::kFloat, HFTRAIN_FIELD(optimizer.adafactor.decay_rate))
      .def("-0.8").min(-1).max(0).doc("adafactor: beta2 at step t is 1 - t^decay_rate.");
  s.add("optimizer.adafactor.clip_threshold", Type::kFloat, HFTRAIN_FIELD(optimizer.adafactor.clip_threshold))
      .def("1.0").min(0).doc("adafactor: clip the update's RMS to this.");
  s.add("optimizer.adafactor.eps1", Type::kFloat, HFTRAIN_FIELD(optimizer.adafactor.eps1))
      .def("1.0e-30").min(0).max(1).doc("adafactor: added to the squared gradient.");
  s.add("optimizer.adafactor.eps2", Type::kFloat, HFTRAIN_FIELD(optimizer.adafactor.eps2))
      .def("1.0e-3").min(0).max(1).doc("adafactor: floor of the parameter scale (with scale_parameter).");
  s.add("optimizer.adafactor.scale_parameter", Type::kBool, HFTRAIN_FIELD(optimizer.adafactor.scale_parameter))
      .def("false").doc("adafactor: scale the step by the parameter's RMS (the Trainer's default is false).");
  s.add("optimizer.adagrad.lr_decay", Type::kFloat, HFTRAIN_FIELD(optimizer.adagrad.lr_decay))
      .def("0.0").min(0).max(1).doc("adagrad: the step's lr is lr / (1 + (t - 1) lr_decay) at the parameter's step t.");
  s.add("optimizer.adagrad.initial_accumulator_value", Type::kFloat,
        HFTRAIN_FIELD(optimizer.adagrad.initial_accumulator_value))
      .on_resume(ResumeChange::kImpossible)
      .def("0.0").min(0).max(1e6).doc("adagrad: the sum of squared gradients starts here.");
  s.add("optimizer.rmsprop.alpha", Type::kFloat, HFTRAIN_FIELD(optimizer.rmsprop.alpha))
      .def("0.99").min(0).max(0.999999).doc("rmsprop: smoothing constant of the squared-gradient average.");
  s.add("optimizer.rmsprop.centered", Type::kBool, HFTRAIN_FIELD(optimizer.rmsprop.centered))
      .on_resume(ResumeChange::kImpossible)
      .def("false").doc("rmsprop: divide by the gradient's estimated variance (keeps a grad_avg per parameter).");
  s.add("optimizer.schedule_free.warmup_steps", Type::kInt, HFTRAIN_FIELD(optimizer.schedule_free.warmup_steps))
      .def("0")
      .min(0)
      .unit("steps")
      .doc("schedule_free_adamw: linear warmup of its lr (its own; the schedule stays constant).");
  s.add("optimizer.schedule_free.r", Type::kFloat, HFTRAIN_FIELD(optimizer.schedule_free.r))
      .def("0.0").min(0).max(100).doc("schedule_free_adamw: the average weights step k by (k + 1)^r.");
  s.add("optimizer.schedule_free.weight_lr_power", Type::kFloat, HFTRAIN_FIELD(optimizer.schedule_free.weight_lr_power))
      .def("2.0")
      .min(0)
      .max(100)
      .doc("schedule_free_adamw: the average weights step k by its largest lr so far to this power.");
  s.add("optimizer.galore.rank", Type::kInt, HFTRAIN_FIELD(optimizer.galore.rank))
      .on_resume(ResumeChange::kImpossible)
      .def("128")
      .min(1)
      .max(65536)
      .doc("galore_adamw: rank of each projected gradient (capped at the matrix's smaller side).");
  s.add("optimizer.galore.update_proj_gap", Type::kInt, HFTRAIN_FIELD(optimizer.galore.update_proj_gap))
      .def("200")
      .min(1)
      .unit("steps")
      .doc("galore_adamw: a new projection (SVD of the gradient) every this many steps of a matrix.");
  s.add("optimizer.galore.scale", Type::kFloat, HFTRAIN_FIELD(optimizer.galore.scale))
      .def("0.25").min(0).max(1e6).doc("galore_adamw: factor on the projected-back update (galore_torch's scale).");
  s.add("optimizer.galore.proj_type", Type::kChoice, HFTRAIN_FIELD(optimizer.galore.proj_type))
      .on_resume(ResumeChange::kImpossible)
      .choices({"std", "reverse_std", "right", "left", "full"}).def("std")
      .doc("galore_adamw: which side to project: std the smaller side (right for tall, left for wide matrices), "
           "reverse_std the larger, right, left, or full (both).");
  s.add("optimizer.galore.target_modules", Type::kStringList, HFTRAIN_FIELD(optimizer.galore.target_modules))
      .on_resume(ResumeChange::kImpossible)
      .def("['*.attn.*', '*.mlp.*']")
      .doc("galore_adamw: parameter-name globs of the weight matrices to project (the Trainer's optim_target_modules); "
           "each must match a matrix; the rest take plain AdamW steps.");
  s.add("optimizer.muon.momentum", Type::kFloat, HFTRAIN_FIELD(optimizer.muon.momentum))
      .def("0.95").min(0).max(0.999999).doc("muon: momentum of the gradient average.");
  s.add("optimizer.muon.nesterov", Type::kBool, HFTRAIN_FIELD(optimizer.muon.nesterov))
      .def("true").doc("muon: orthogonalise the Nesterov look-ahead of the momentum instead of the momentum.");
  s.add("optimizer.muon.ns_steps", Type::kInt, HFTRAIN_FIELD(optimizer.muon.ns_steps))
      .def("5").min(1).max(99).doc("muon: Newton-Schulz iterations per matrix and step.");
  s.add("optimizer.muon.eps", Type::kFloat, HFTRAIN_FIELD(optimizer.muon.eps))
      .def("1.0e-7").min(0).max(1).doc("muon: floor of the matrix norm the iteration starts by dividing by.");
  s.add("optimizer.muon.adjust_lr", Type::kChoice, HFTRAIN_FIELD(optimizer.muon.adjust_lr))
      .choices({"original", "match_rms_adamw"})
      .def("original")
      .doc("muon: each matrix's learning rate: original lr sqrt(max(1, rows / cols)); match_rms_adamw "
           "0.2 lr sqrt(max(rows, cols)), an update of AdamW's size, so that one optimizer.lr serves both parts.");
  s.add("optimizer.muon.params", Type::kStringList, HFTRAIN_FIELD(optimizer.muon.params))
      .on_resume(ResumeChange::kImpossible)
      .def("[]")
      .doc("muon: parameter-name globs of the matrices Muon updates, each matching a 2-D parameter; empty: the "
           "weights of the hidden linear layers (not the embeddings or the output layer). The rest take AdamW steps.");
  s.add("optimizer.apollo.rank", Type::kInt, HFTRAIN_FIELD(optimizer.apollo.rank))
      .on_resume(ResumeChange::kImpossible)
      .def("128")
      .min(1)
      .max(65536)
      .doc("apollo_adamw: rank of the random projection of each matrix's gradient (APOLLO-Mini: 1).");
  s.add("optimizer.apollo.update_proj_gap", Type::kInt, HFTRAIN_FIELD(optimizer.apollo.update_proj_gap))
      .def("200").min(1).unit("steps").doc("apollo_adamw: a new random projection every this many steps of a matrix.");
  s.add("optimizer.apollo.scale", Type::kFloat, HFTRAIN_FIELD(optimizer.apollo.scale))
      .def("1.0")
      .min(0)
      .max(1e6)
      .doc("apollo_adamw: the scaled gradient is multiplied by sqrt(scale) (APOLLO-Mini: 128).");
  s.add("optimizer.apollo.scale_type", Type::kChoice, HFTRAIN_FIELD(optimizer.apollo.scale_type))
      .on_resume(ResumeChange::kImpossible)
      .choices({"channel", "tensor"}).def("channel")
      .doc("apollo_adamw: one scaling factor per channel (the projection's side), or one per matrix (APOLLO-Mini).");
  s.add("optimizer.apollo.proj_type", Type::kChoice, HFTRAIN_FIELD(optimizer.apollo.proj_type))
      .on_resume(ResumeChange::kImpossible)
      .choices({"std", "reverse_std", "right", "left"}).def("std")
      .doc("apollo_adamw: which side to project: std the smaller side (right for tall, left for wide matrices), "
           "reverse_std the larger, right or left.");
  s.add("optimizer.apollo.scale_front", Type::kBool, HFTRAIN_FIELD(optimizer.apollo.scale_front))
      .def("false").doc("apollo_adamw: apply sqrt(scale) before the norm-growth limiter instead of after it.");
  s.add("optimizer.apollo.norm_growth_limiter", Type::kBool, HFTRAIN_FIELD(optimizer.apollo.norm_growth_limiter))
      .on_resume(ResumeChange::kImpossible)
      .def("true")
      .doc("apollo_adamw: Fira's limiter: the scaled gradient's norm grows by at most 1.01x a step (apollo-torch's "
           "disable_nl=False).");
  s.add("optimizer.apollo.target_modules", Type::kStringList, HFTRAIN_FIELD(optimizer.apollo.target_modules))
      .on_resume(ResumeChange::kImpossible)
      .def("['*.attn.*', '*.mlp.*']")
      .doc("apollo_adamw: parameter-name globs of the weight matrices APOLLO scales (the Trainer's "
           "optim_target_modules); each must match a matrix; the rest take plain AdamW steps.");
  s.add("optimizer.amsgrad", Type::kBool, HFTRAIN_FIELD(optimizer.amsgrad))
      .on_resume(ResumeChange::kImpossible)
      .def("false")
      .doc("adamw: AMSGrad, the denominator from the largest second moment seen (as torch.optim.AdamW(amsgrad=True)).");

  s.section("scheduler", "The learning-rate schedule (Hugging Face Trainer formulas).", ResumeChange::kTraining);
  s.add("scheduler.name", Type::kChoice, HFTRAIN_FIELD(scheduler.name))
      .choices({"constant", "constant_with_warmup", "linear", "cosine", "cosine_with_restarts",
                "cosine_with_min_lr", "polynomial", "inverse_sqrt", "warmup_stable_decay",
                "reduce_lr_on_plateau"})
      .def("linear").doc("Schedule shape.");
  s.add("scheduler.warmup_steps", Type::kInt, HFTRAIN_FIELD(scheduler.warmup_steps))
      .def("0").min(0).unit("steps").doc("Linear warmup from 0 to optimizer.lr.");
  s.add("scheduler.warmup_ratio", Type::kFloat, HFTRAIN_FIELD(scheduler.warmup_ratio))
      .nullable()
      .min(0)
      .max(1)
      .doc("Warmup as a fraction of the run's optimizer steps, rounded up (the Trainer's warmup_ratio); in place of "
           "scheduler.warmup_steps.");
  s.add("scheduler.num_cycles", Type::kFloat, HFTRAIN_FIELD(scheduler.num_cycles))
      .nullable().min(0).max(1000)
      .doc("Cosine waves over the decay: unset means 0.5 (half a wave), or 1 for cosine_with_restarts.");
  s.add("scheduler.min_lr", Type::kFloat, HFTRAIN_FIELD(scheduler.min_lr))
      .nullable().min(0).max(10).doc("cosine_with_min_lr: the learning rate the decay ends at.");
  s.add("scheduler.min_lr_rate", Type::kFloat, HFTRAIN_FIELD(scheduler.min_lr_rate))
      .nullable().min(0).max(1)
      .doc("cosine_with_min_lr, warmup_stable_decay: the floor as a fraction of optimizer.lr.");
  s.add("scheduler.lr_end", Type::kFloat, HFTRAIN_FIELD(scheduler.lr_end))
      .def("1.0e-7").min(0).max(10).doc("polynomial: the learning rate at the end of training.");
  s.add("scheduler.power", Type::kFloat, HFTRAIN_FIELD(scheduler.power))
      .def("1.0").min(0).max(100).doc("polynomial: the power of the decay (1 is linear).");
  s.add("scheduler.timescale", Type::kInt, HFTRAIN_FIELD(scheduler.timescale))
      .nullable().min(1).unit("steps")
      .doc("inverse_sqrt: lr = lr0 / sqrt((step + timescale - warmup) / timescale); unset: warmup_steps or 10000.");
  s.add("scheduler.wsd.decay_steps", Type::kInt, HFTRAIN_FIELD(scheduler.wsd.decay_steps))
      .nullable().min(0).unit("steps").doc("warmup_stable_decay: length of the final decay (required).");
  s.add("scheduler.wsd.stable_steps", Type::kInt, HFTRAIN_FIELD(scheduler.wsd.stable_steps))
      .nullable().min(0).unit("steps").doc("warmup_stable_decay: length of the constant phase; unset: the rest.");
  s.add("scheduler.wsd.warmup_type", Type::kChoice, HFTRAIN_FIELD(scheduler.wsd.warmup_type))
      .choices({"linear", "cosine", "1-sqrt"}).def("linear").doc("warmup_stable_decay: warmup shape.");
  s.add("scheduler.wsd.decay_type", Type::kChoice, HFTRAIN_FIELD(scheduler.wsd.decay_type))
      .choices({"linear", "cosine", "1-sqrt"}).def("cosine").doc("warmup_stable_decay: decay shape.");
  s.add("scheduler.plateau.mode", Type::kChoice, HFTRAIN_FIELD(scheduler.plateau.mode))
      .choices({"min", "max"}).def("min").doc("reduce_lr_on_plateau: whether the eval metric should fall or rise.");
  s.add("scheduler.plateau.factor", Type::kFloat, HFTRAIN_FIELD(scheduler.plateau.factor))
      .def("0.1").min(0).max(0.999999).doc("reduce_lr_on_plateau: multiply the lr by this on a plateau.");
  s.add("scheduler.plateau.patience", Type::kInt, HFTRAIN_FIELD(scheduler.plateau.patience))
      .def("10")
      .min(0)
      .unit("evaluations")
      .doc("reduce_lr_on_plateau: evaluations without improvement before reducing.");
  s.add("scheduler.plateau.threshold", Type::kFloat, HFTRAIN_FIELD(scheduler.plateau.threshold))
      .def("1.0e-4").min(0).doc("reduce_lr_on_plateau: the smallest change that counts as improvement.");
  s.add("scheduler.plateau.threshold_mode", Type::kChoice, HFTRAIN_FIELD(scheduler.plateau.threshold_mode))
      .choices({"rel", "abs"})
      .def("rel")
      .doc("reduce_lr_on_plateau: threshold relative to the best value, or absolute.");
  s.add("scheduler.plateau.cooldown", Type::kInt, HFTRAIN_FIELD(scheduler.plateau.cooldown))
      .def("0").min(0).unit("evaluations").doc("reduce_lr_on_plateau: evaluations to wait after a reduction.");
  s.add("scheduler.plateau.min_lr", Type::kFloat, HFTRAIN_FIELD(scheduler.plateau.min_lr))
      .def("0.0").min(0).max(10).doc("reduce_lr_on_plateau: never reduce below this learning rate.");

  s.section("preference",
            "Preference training on chosen/rejected pairs (data in TRL's preference format), as TRL computes it.",
            ResumeChange::kTraining);
  s.add("preference.objective", Type::kChoice, HFTRAIN_FIELD(preference.objective))
      .choices({"none", "dpo", "simpo", "orpo", "reward", "kto"})
      .def("none")
      .doc(
          "none: language modelling on the data; dpo: DPO against a reference model; simpo: SimPO (length-averaged "
          "margins, no reference); orpo: ORPO (the chosen answers' cross-entropy plus an odds-ratio term); reward: a "
          "reward model (a one-output score head in place of the output layer, read at each sequence's last token, "
          "trained with the Bradley-Terry loss; exported as *ForSequenceClassification with num_labels=1); kto: KTO on "
          "unpaired answers marked desirable or not (data.label_field), against a reference model and the KL "
          "point estimated from each micro-batch's mismatched prompt and answer rows (TRL's KTOTrainer).");
  s.add("preference.loss_type", Type::kChoice, HFTRAIN_FIELD(preference.loss_type))
      .choices({"sigmoid", "hinge", "ipo", "robust"}).def("sigmoid")
      .doc("DPO's loss: sigmoid (the paper), hinge (RSO), ipo (length-averaged), robust (label smoothing as noise).");
  s.add("preference.beta", Type::kFloat, HFTRAIN_FIELD(preference.beta))
      .def("0.1").min(1e-6).max(1e6).doc("The objective's beta: DPO's and SimPO's temperature, ORPO's lambda.");
  s.add("preference.label_smoothing", Type::kFloat, HFTRAIN_FIELD(preference.label_smoothing))
      .def("0.0").min(0).max(0.499).doc("DPO robust's and SimPO's eps: the share of pairs assumed flipped.");
  s.add("preference.gamma", Type::kFloat, HFTRAIN_FIELD(preference.gamma))
      .def("0.5").min(0).max(1e6).doc("SimPO's target margin (TRL's simpo_gamma).");
  s.add("preference.cpo_alpha", Type::kFloat, HFTRAIN_FIELD(preference.cpo_alpha))
      .def("0.0").min(0).max(1e6).doc("SimPO: weight of the chosen answers' cross-entropy added (TRL's CPO term).");
  s.add("preference.desirable_weight", Type::kFloat, HFTRAIN_FIELD(preference.desirable_weight))
      .def("1.0").min(0).max(1e6).doc("kto: the weight of a desirable answer's loss (TRL's desirable_weight).");
  s.add("preference.undesirable_weight", Type::kFloat, HFTRAIN_FIELD(preference.undesirable_weight))
      .def("1.0").min(0).max(1e6).doc("kto: the weight of an undesirable answer's loss (TRL's undesirable_weight).");
  s.add("preference.center_coefficient", Type::kFloat, HFTRAIN_FIELD(preference.center_coefficient))
      .def("0.0").min(0).max(1e6)
      .doc("reward: weight of the mean squared summed rewards added to the loss, which keeps the scores centred "
           "on 0 (TRL's center_rewards_coefficient); 0: off.");
  s.add("preference.reference", Type::kChoice, HFTRAIN_FIELD(preference.reference))
      .choices({"auto", "copy", "adapters_off", "precomputed"}).def("auto")
      .doc("DPO's reference: copy (a frozen copy of the starting weights), adapters_off (with LoRA, the same model "
           "with its adapters off: no second copy; continuing an adapter (peft.from), its starting values swapped in "
           "instead, as TRL's ref adapter), precomputed (TRL's precompute_ref_log_probs: the starting model "
           "scores every pair once before training, cached beside the token cache; no reference model in memory); "
           "auto: adapters_off with LoRA, else copy.");
}

}  // namespace hftrain::config
