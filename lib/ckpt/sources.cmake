# The checkpoint stage's sources (relative to lib/ckpt), included by lib/CMakeLists.txt.
# Torch-free: the directory layout, the manifest, the optimizer shards' index, verification,
# rotation, locating the checkpoint to resume from, the resume policy, the run directory's lock.
set(HFTRAIN_CKPT_CORE_SOURCES
  layout.cpp
  locate.cpp
  manifest.cpp
  optimizer_index.cpp
  resume_policy.cpp
  save_policy.cpp
  rotation.cpp
  run_lock.cpp
  verify.cpp)
# LibTorch: the writer streams tensors into safetensors files; every rank writes its optimizer
# shard (optimizer_save: the protocol; optimizer_shards: the files and their reader).
set(HFTRAIN_CKPT_TORCH_SOURCES
  optimizer_save.cpp
  optimizer_shards.cpp
  writer.cpp)
