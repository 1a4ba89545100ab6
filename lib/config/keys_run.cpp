// Config keys of checkpoint, distributed, peft and logging: how the run is carried out. Each key enters together with
// the code that reads it (see keys.cpp).
#include "config/keys.h"

namespace hftrain::config {

void add_run_keys(Schema& s) {
  s.section("checkpoint", "When checkpoints are written, which are kept, and what a signal does.", ResumeChange::kSafe);
  s.add("checkpoint.every_steps", Type::kInt, HFTRAIN_FIELD(checkpoint.every_steps))
      .def("0").min(0).unit("steps").doc("Save a checkpoint every N steps; 0: no periodic saves.");
  s.add("checkpoint.every_epoch", Type::kBool, HFTRAIN_FIELD(checkpoint.every_epoch))
      .def("false").doc("Save a checkpoint when an epoch of training data is complete.");
  s.add("checkpoint.at_end", Type::kBool, HFTRAIN_FIELD(checkpoint.at_end))
      .def("true").doc("Save a checkpoint when training ends (the model alone always goes to final/).");
  s.add("checkpoint.keep_last", Type::kInt, HFTRAIN_FIELD(checkpoint.keep_last))
      .def("3").min(0).unit("checkpoints")
      .doc("Keep the newest N checkpoints (by step); 0 keeps all. The newest and the best are never deleted.");
  s.add("checkpoint.keep_best", Type::kBool, HFTRAIN_FIELD(checkpoint.keep_best))
      .def("false")
      .doc("Save on every new best eval loss and never delete that checkpoint (needs trainer.eval_every).");
  s.add("checkpoint.shard_size", Type::kSize, HFTRAIN_FIELD(checkpoint.shard_size))
      .def("5GB").min(1).unit("bytes")
      .doc("Model weights above this size are split into safetensors shards with an index (Hugging Face layout).");
  s.add("checkpoint.on_signal", Type::kChoice, HFTRAIN_FIELD(checkpoint.on_signal))
      .choices({"save", "exit"}).def("save")
      .doc("On SIGINT/SIGTERM: finish the step, then save a checkpoint (save) or not (exit).");
  s.add("checkpoint.signal_exit_code", Type::kInt, HFTRAIN_FIELD(checkpoint.signal_exit_code))
      .nullable().min(0).max(255).doc("Exit code after a signal; unset: 128 + the signal number.");
  s.add("checkpoint.on_save_error", Type::kChoice, HFTRAIN_FIELD(checkpoint.on_save_error))
      .choices({"stop", "continue"}).def("stop")
      .doc("A save that fails (disk full, read-only): stop the run with exit 1, or log it and train on.");
  s.add("checkpoint.async", Type::kBool, HFTRAIN_FIELD(checkpoint.async_save))
      .def("false")
      .doc("Save in the background: the step copies the state to host memory (pinned on CUDA) and trains on while a "
           "thread on each rank writes it; the checkpoint and `latest` appear once every rank's files are in, and "
           "a failure is reported then (checkpoint.on_save_error). One save at a time; the last save of a run (its "
           "end, a signal) is written at once. Costs host memory for one copy of the weights and optimizer state.");

  s.section("distributed", "Multi-process training.", ResumeChange::kSafe);
  s.add("distributed.strategy", Type::kChoice, HFTRAIN_FIELD(distributed.strategy))
      .on_resume(ResumeChange::kTraining)
      .choices({"ddp", "zero1", "zero2", "zero3", "hybrid"}).alias("fsdp", "zero3").def("ddp")
      .doc("Sharding strategy: ddp (replicated), zero1 (optimizer state sharded), zero2 (and gradients), zero3 (and "
           "parameters, gathered per block; fsdp is an alias), hybrid (zero3 inside a node, replicated across nodes).");
  s.add("distributed.backend", Type::kChoice, HFTRAIN_FIELD(distributed.backend))
      .on_resume(ResumeChange::kSafe)
      .choices({"auto", "nccl", "mpi"}).def("auto")
      .doc("Communication backend; auto picks NCCL for CUDA, MPI for CPU.");
  s.add("distributed.bucket_size", Type::kSize, HFTRAIN_FIELD(distributed.bucket_size))
      .on_resume(ResumeChange::kSafe)
      .def("25MiB").min(1).unit("bytes")
      .doc("Gradients per all-reduce (ddp) or reduce-scatter (zero1/2/3) bucket, launched as soon as the bucket fills "
           "during backward.");
  s.add("distributed.cpu_offload", Type::kBool, HFTRAIN_FIELD(distributed.cpu_offload))
      .on_resume(ResumeChange::kSafe)
      .def("false")
      .doc("Keep the optimizer state (and with zero3 the parameter shards) in pinned host memory; the update runs "
           "on the CPU. Needs a zero strategy.");
  s.add("distributed.reduce_dtype", Type::kChoice, HFTRAIN_FIELD(distributed.reduce_dtype))
      .on_resume(ResumeChange::kTraining)
      .choices({"fp32", "param"}).def("fp32")
      .doc("Precision of gradient reduction: fp32, or the compute precision (trainer.precision) to halve traffic.");
  s.add("distributed.tensor_parallel", Type::kInt, HFTRAIN_FIELD(distributed.tensor_parallel))
      .on_resume(ResumeChange::kTraining)
      .def("1").min(1)
      .doc("Ranks that split each block's matrices (Megatron tensor parallelism): q/k/v and gate/up by columns, "
           "the attention output and down projections by rows, the vocabulary across ranks. Divides the world "
           "size; the data-parallel size is the rest. Ranks of a group are consecutive (inside a node).");
  s.add("distributed.sequence_parallel", Type::kBool, HFTRAIN_FIELD(distributed.sequence_parallel))
      .on_resume(ResumeChange::kTraining)
      .def("false")
      .doc("With tensor_parallel > 1: the norms, dropout and residual stream between the split layers hold a "
           "slice of the sequence, with reduce-scatter and all-gather in place of the all-reduces.");
  s.add("distributed.pipeline_parallel", Type::kInt, HFTRAIN_FIELD(distributed.pipeline_parallel))
      .on_resume(ResumeChange::kTraining)
      .def("1").min(1)
      .doc("Pipeline stages: each holds consecutive blocks (the embeddings on the first, the final norm, head and "
           "loss on the last) and passes activations and their gradients to its neighbours. The world is data "
           "parallel x tensor parallel x pipeline parallel, pipeline outermost; the accumulation micro-batches "
           "(trainer.grad_accum_steps) flow through the pipeline.");
  s.add("distributed.pipeline_virtual_stages", Type::kInt, HFTRAIN_FIELD(distributed.pipeline_virtual_stages))
      .on_resume(ResumeChange::kSafe)
      .def("1").min(1)
      .doc("Interleaved pipeline (Megatron's virtual stages): each stage holds this many groups of consecutive "
           "blocks, group c of stage s being virtual stage c x pipeline_parallel + s, so the pipeline fills and "
           "drains this many times faster for one more exchange per micro-batch and group. Needs "
           "trainer.grad_accum_steps a multiple of pipeline_parallel (micro-batches go in groups of the stages).");
  s.add("distributed.pipeline_stages", Type::kFloatList, HFTRAIN_FIELD(distributed.pipeline_stages))
      .on_resume(ResumeChange::kTraining)
      .def("[]").min(0)
      .doc("Block boundaries of the pipeline's (virtual) stages, pipeline_parallel x pipeline_virtual_stages + 1 "
           "ascending whole numbers from 0 to the model's layers: [0, 6, 12] puts blocks 0-5 on stage 0 and 6-11 on "
           "stage 1. Empty: stages balanced by parameter count (the embeddings counted on the first stage, the head "
           "on the last: a tied head as the copy of the embedding it holds).");
  s.add("distributed.pipeline_schedule", Type::kChoice, HFTRAIN_FIELD(distributed.pipeline_schedule))
      .on_resume(ResumeChange::kSafe)
      .choices({"gpipe", "1f1b"}).def("1f1b")
      .doc("Order of the micro-batches' forwards and backwards: gpipe runs all forwards, then all backwards (every "
           "micro-batch's activations held at once); 1f1b alternates one forward and one backward once the pipeline "
           "is full (at most pipeline_parallel micro-batches' activations held per stage). The same gradients.");
  s.add("distributed.timeout", Type::kDuration, HFTRAIN_FIELD(distributed.timeout))
      .on_resume(ResumeChange::kSafe)
      .def("10m").min(1).unit("seconds")
      .doc("Longest wait for a collective during training steps; then the ranks that did not arrive are named and "
           "every process exits.");
  s.add("distributed.startup_timeout", Type::kDuration, HFTRAIN_FIELD(distributed.startup_timeout))
      .on_resume(ResumeChange::kSafe)
      .def("10m").min(1).unit("seconds").doc("The same budget for the rendezvous of all ranks at start-up.");
  s.add("distributed.data_timeout", Type::kDuration, HFTRAIN_FIELD(distributed.data_timeout))
      .on_resume(ResumeChange::kSafe)
      .def("1h").min(1).unit("seconds")
      .doc("The same budget while rank 0 prepares the data (tokenizing a corpus into the token cache).");
  s.add("distributed.eval_timeout", Type::kDuration, HFTRAIN_FIELD(distributed.eval_timeout))
      .on_resume(ResumeChange::kSafe)
      .def("30m").min(1).unit("seconds").doc("The same budget during evaluation.");
  s.add("distributed.checkpoint_timeout", Type::kDuration, HFTRAIN_FIELD(distributed.checkpoint_timeout))
      .on_resume(ResumeChange::kSafe)
      .def("30m").min(1).unit("seconds").doc("The same budget while a checkpoint is written.");

  s.section("peft",
            "Parameter-efficient fine-tuning: LoRA adapters trained on a frozen base model, saved as the peft library "
            "saves them.",
            ResumeChange::kImpossible);
  s.add("peft.method", Type::kChoice, HFTRAIN_FIELD(peft.method))
      .choices({"none", "lora"}).def("none")
      .doc("none: train every weight; lora: freeze the base model and train low-rank adapters (peft.lora.*).");
  s.add("peft.lora.r", Type::kInt, HFTRAIN_FIELD(peft.lora.r))
      .def("8").min(1).max(65536).doc("LoRA rank: each adapted layer W gains B (out x r) A (r x in).");
  s.add("peft.lora.alpha", Type::kFloat, HFTRAIN_FIELD(peft.lora.alpha))
      .def("8").min(0).max(1e6).doc("LoRA scale numerator: the update is (alpha / r) B A x (peft's lora_alpha).");
  s.add("peft.lora.dropout", Type::kFloat, HFTRAIN_FIELD(peft.lora.dropout))
      .def("0.0").min(0).max(0.999).doc("Dropout on the adapters' input (peft's lora_dropout).");
  s.add("peft.lora.target_modules", Type::kStringList, HFTRAIN_FIELD(peft.lora.target_modules))
      .def("[]")
      .doc(
          "Hugging Face module names or globs to adapt (q_proj, v_proj, 'model.layers.*.mlp.*', c_attn); a name "
          "matches "
          "the whole module name or its last parts, as in peft; ['all-linear']: every linear layer but the output "
          "layer; []: peft's default for the architecture (q_proj and v_proj; c_attn for gpt2; query and value for "
          "bert).");
  s.add("peft.lora.use_rslora", Type::kBool, HFTRAIN_FIELD(peft.lora.use_rslora))
      .def("false").doc("Rank-stabilised LoRA: scale alpha / sqrt(r) instead of alpha / r.");
  s.add("peft.lora.use_dora", Type::kBool, HFTRAIN_FIELD(peft.lora.use_dora))
      .def("false")
      .doc("DoRA (weight-decomposed LoRA, peft's use_dora): each adapted layer's output rows rescaled by a trained "
           "magnitude over the norm of W + scale B A (the norm held constant in the backward, as peft does).");
  s.add("peft.lora.init", Type::kChoice, HFTRAIN_FIELD(peft.lora.init))
      .choices({"default", "gaussian"})
      .def("default")
      .doc(
          "Adapter A's initial values: default as peft (kaiming-uniform, bound 1/sqrt(in)), gaussian N(0, 1/r); B "
          "starts at 0.");
  s.add("peft.modules_to_save", Type::kStringList, HFTRAIN_FIELD(peft.modules_to_save))
      .def("[]")
      .doc(
          "Hugging Face modules trained in full next to the adapters and saved with them, e.g. ['lm_head'] or a "
          "classifier.");
  s.add("peft.from", Type::kString, HFTRAIN_FIELD(peft.from))
      .nullable()
      .doc(
          "Continue training a peft adapter directory (adapter_config.json + adapter_model.safetensors) on "
          "model.from.");
  s.add("peft.quantize_base", Type::kChoice, HFTRAIN_FIELD(peft.quantize_base))
      .choices({"none", "nf4", "int8"}).def("none")
      .doc("QLoRA: keep the frozen base's linear layers quantized and dequantize them per product: nf4 as "
           "bitsandbytes' 4-bit NormalFloat (blocks of 64, double-quantized scales), int8 as LLM.int8's row-wise "
           "absmax; the output layer and embeddings stay as loaded. Needs peft.method=lora.");

  s.section("logging", "What hftrain prints and records.", ResumeChange::kSafe);
  s.add("logging.level", Type::kChoice, HFTRAIN_FIELD(logging.level))
      .choices({"debug", "info", "warn", "error"}).def("info").doc("Console and log-file verbosity.");
  s.add("logging.report_to", Type::kStringList, HFTRAIN_FIELD(logging.report_to))
      .def("[jsonl, tensorboard]")
      .doc("Where the metrics go, any of: jsonl (metrics.jsonl, which `hftrain runs` and `hftrain sweep` read), "
           "tensorboard (the event file), mlflow (a tracking server: logging.mlflow.*). A tracker that fails never "
           "stops training.");
  s.add("logging.mlflow.tracking_uri", Type::kString, HFTRAIN_FIELD(logging.mlflow.tracking_uri))
      .def("${env:MLFLOW_TRACKING_URI,}")
      .doc("The MLflow tracking server, http(s)://host:port (its REST API; a file store is not written). Needed when "
           "report_to has mlflow.");
  s.add("logging.mlflow.experiment", Type::kString, HFTRAIN_FIELD(logging.mlflow.experiment))
      .def("${env:MLFLOW_EXPERIMENT_NAME,hftrain}").doc("The MLflow experiment, created when missing.");
  s.add("logging.mlflow.run_name", Type::kString, HFTRAIN_FIELD(logging.mlflow.run_name))
      .def("${run.name}").doc("The MLflow run's name. A resumed run goes on logging to the MLflow run it started.");
  s.add("logging.mlflow.flush_every", Type::kDuration, HFTRAIN_FIELD(logging.mlflow.flush_every))
      .def("10s").min(0).doc("Metrics are sent in batches, at most this long after they were logged (0: at once).");
  s.add("logging.mlflow.timeout", Type::kDuration, HFTRAIN_FIELD(logging.mlflow.timeout))
      .def("10s").min(1).doc("One request's time limit; a server that does not answer is retried with back-off.");

  s.section("debug", "Numeric debugging: where an inf or NaN first appears.", ResumeChange::kSafe);
  s.add("debug.underflow_overflow", Type::kBool, HFTRAIN_FIELD(debug.underflow_overflow))
      .def("false")
      .doc("As the Trainer's debug=\"underflow_overflow\": every module of the forward records the abs-min and "
           "abs-max of its inputs, weights and output; at the first inf or NaN the last debug.max_frames frames are "
           "printed (module names with their values) and the run exits 1. One device read per module: for "
           "debugging only. Off: no cost.");
  s.add("debug.max_frames", Type::kInt, HFTRAIN_FIELD(debug.max_frames))
      .def("21").min(1).doc("The frames debug.underflow_overflow prints: the modules before and at the first inf/NaN.");
  s.add("debug.detect_anomaly", Type::kBool, HFTRAIN_FIELD(debug.detect_anomaly))
      .def("false")
      .doc("Autograd's anomaly mode: the backward checks every operation's gradients and the run stops, exit 1, "
           "naming the operation that produced a NaN. Slow: for debugging only.");

  s.section("callbacks", "The user's own callbacks: plugins and commands on the run's events.", ResumeChange::kSafe);
  s.add("callbacks", Type::kCallbackList, HFTRAIN_FIELD(callbacks))
      .def("[]")
      .doc("Plugins {plugin: libmine.so, args: {k: v}, ranks: main|all}: a shared library speaking "
           "include/hftrain/plugin.h, told of train begin/end, every step's end, evaluations and saves, that may ask "
           "the run to stop, save or evaluate; rank 0 only unless ranks: all. Commands {command: TEXT, on: [begin, "
           "evaluate, save, end], background: true, required: false}: run through sh -c on rank 0 with "
           "HFTRAIN_EVENT, HFTRAIN_STEP, HFTRAIN_CHECKPOINT, HFTRAIN_RUN_DIR and HFTRAIN_METRICS (a JSON file of the "
           "event's figures) set, their output in <run_dir>/callbacks.log; a failure is reported and stops the run "
           "only when required.");
}

}  // namespace hftrain::config
