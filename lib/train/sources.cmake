set(HFTRAIN_TRAIN_CORE_SOURCES
  baseline.cpp
  callbacks.cpp)
set(HFTRAIN_TRAIN_TORCH_SOURCES
  precision.cpp
  step_math.cpp
  trainer.cpp
  wiring.cpp)
