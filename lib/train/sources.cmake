# The training stage (relative to lib/train), one sub-folder per idea:
#   (top)    the Trainer: the loop (trainer.cpp), one step and its logging window (trainer_step),
#            checkpoints (trainer_save, trainer_background_save, trainer_checkpoint), evaluation, bad
#            steps (trainer_divergence), callbacks,
#            the best metric
#   build/   how a Trainer is built from the config: the builder, config -> stage options (wiring),
#            model.from, peft, tensor and pipeline parallelism's set-up
#   task/    what the loop trains: the task models (causal LM, sequence classifier, adapters)
#   step/    what a step runs through: the runners (plain, pipelined), precision and master
#            weights, the loss and clipping math, bad-step judges, the stop agreement, step hooks
#   state/   the checkpoint's own state files, fields, generators, the environment record
#   report/  metrics, trackers, the profiler, device figures, the run summary, the baseline, the
#            user's callbacks (plugins, commands)
set(HFTRAIN_TRAIN_CORE_SOURCES
  best_metric.cpp
  callbacks.cpp
  report/baseline.cpp
  report/metrics_callback.cpp
  report/run_summary.cpp
  report/tracking.cpp
  state/checkpoint_fields.cpp
  step/divergence.cpp)
set(HFTRAIN_TRAIN_TORCH_SOURCES
  evaluation.cpp
  trainer.cpp
  trainer_background_save.cpp
  trainer_checkpoint.cpp
  trainer_divergence.cpp
  trainer_eval.cpp
  trainer_save.cpp
  trainer_step.cpp
  build/determinism.cpp
  build/model_from.cpp
  build/peft_setup.cpp
  build/pipeline_setup.cpp
  build/tp_setup.cpp
  build/trainer_builder.cpp
  build/wiring.cpp
  task/adapter_model.cpp
  task/causal_lm.cpp
  task/sequence_classifier.cpp
  step/device_skip.cpp
  step/fault_injection.cpp
  step/master_weights.cpp
  step/numeric_debug.cpp
  preference/objectives.cpp
  preference/preference_task.cpp
  preference/reward_task.cpp
  preference/reference_pass.cpp
  preference/kto_task.cpp
  step/pipeline_runner.cpp
  step/precision.cpp
  step/step_math.cpp
  step/step_runner.cpp
  step/stop_agreement.cpp
  state/background_save.cpp
  state/checkpoint_rng.cpp
  state/checkpoint_snapshot.cpp
  state/checkpoint_state.cpp
  state/environment_record.cpp
  report/command_callback.cpp
  report/device_stats.cpp
  report/plugin_callback.cpp
  report/profiler_callback.cpp
  report/user_callbacks.cpp)
