# hftrain's CUDA kernels (relative to lib/kernels), compiled by nvcc where the toolkit is present.
# scripts/check-kernels.sh compiles each for sm_80 and sm_90 and fails on register spills.
set(HFTRAIN_KERNEL_SOURCES
  fused_classifier.cu)
