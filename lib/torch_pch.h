// The precompiled header of every translation unit in lib/ that uses LibTorch (see
// lib/CMakeLists.txt). torch/torch.h costs ~20 s per translation unit to parse; once precompiled
// it costs about a second. Torch-free stages never see it.
#pragma once
#include <torch/torch.h>
