# The checkpoint stage's sources (relative to lib/ckpt), included by lib/CMakeLists.txt.
# Torch-free: the directory layout, the manifest, verification, rotation, locating the checkpoint
# to resume from, the resume policy.
set(HFTRAIN_CKPT_CORE_SOURCES
  layout.cpp
  locate.cpp
  manifest.cpp
  resume_policy.cpp
  rotation.cpp
  verify.cpp)
# LibTorch: the writer streams tensors into safetensors files.
set(HFTRAIN_CKPT_TORCH_SOURCES
  writer.cpp)
