// Host memory of this process, for the peak_mem_mb field on CPU runs. Torch-free: the CUDA
// allocator's peak (torch::cuda::max_memory_allocated) is measured by the caller on GPU runs.
#pragma once

#include <optional>
#include <string_view>

namespace hftrain::metrics {

inline constexpr double kBytesPerMib = 1024.0 * 1024.0;

// Peak resident set size of this process in MiB: VmHWM from /proc/self/status, else
// getrusage(RUSAGE_SELF).ru_maxrss. nullopt when neither is available.
std::optional<double> host_peak_rss_mib();
// Current resident set size in MiB (VmRSS); nullopt when /proc is unavailable.
std::optional<double> host_current_rss_mib();

// The value in kB of a "Key:   1234 kB" line of /proc/<pid>/status text; nullopt when absent.
std::optional<double> parse_proc_status_kb(std::string_view status_text, std::string_view key);

}  // namespace hftrain::metrics
