# lr_schedule.cpp is listed in lib/core_sources.cmake (the fuzz build compiles it too).
set(HFTRAIN_OPTIM_CORE_SOURCES
  param_groups.cpp)
set(HFTRAIN_OPTIM_TORCH_SOURCES
  adafactor.cpp
  adagrad.cpp
  adamw_8bit.cpp
  apollo_adamw.cpp
  schedule_free_adamw.cpp
  fused_adamw.cpp
  fused_sgd.cpp
  galore_adamw.cpp
  lion.cpp
  low_rank.cpp
  muon.cpp
  optimizer.cpp
  rmsprop.cpp
  state_io.cpp)
