# The training stage (relative to lib/train): what the loop trains (task models), how a Trainer is
# built from the config, the step and the loop, evaluation, checkpoint state, precision.
set(HFTRAIN_TRAIN_CORE_SOURCES
  baseline.cpp
  callbacks.cpp
  checkpoint_fields.cpp
  fault_injection.cpp
  metrics_callback.cpp)
set(HFTRAIN_TRAIN_TORCH_SOURCES
  adapter_model.cpp
  checkpoint_state.cpp
  peft_setup.cpp
  causal_lm.cpp
  device_stats.cpp
  evaluation.cpp
  model_from.cpp
  sequence_classifier.cpp
  precision.cpp
  profiler_callback.cpp
  step_math.cpp
  trainer.cpp
  trainer_builder.cpp
  trainer_checkpoint.cpp
  trainer_tp.cpp
  tp_setup.cpp
  pipeline_setup.cpp
  pipeline_runner.cpp
  wiring.cpp)
