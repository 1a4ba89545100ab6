// What this binary is and what it was built with.
#pragma once

#include <string>

namespace hftrain::util {

struct BuildFlags {
  const char* version;        // hftrain's own version, e.g. "0.1.0"
  const char* revision;       // git revision, "-dirty" when built from a modified tree
  const char* torch_version;  // LibTorch version the build found
  bool cuda;                  // linked against LibTorch's CUDA libraries
  bool nccl;                  // NCCL headers found (the NCCL backend can be built)
  bool mpi;                   // Open MPI found
};

extern const BuildFlags kBuildFlags;  // generated at build time (HftrainWriteBuildInfo.cmake)

// The multi-line report of `hftrain --version`: the flags above plus the devices this process
// sees at run time.
std::string version_report();

}  // namespace hftrain::util
