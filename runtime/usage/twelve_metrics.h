// The twelve resource metrics of a job (after Driple): for each of compute, device memory,
// network TX and network RX, the average idle duration, the average burst duration and the
// average consumption during a burst. Recorded by UsageRecorder, predicted by tl-predict; both
// name them by these keys, in this order.
#pragma once

#include <array>
#include <string>

namespace tl::usage {

inline constexpr std::array<const char*, 12> kMetricNames = {
    "compute_idle_s", "compute_burst_s", "compute_burst_util",
    "memory_idle_s",  "memory_burst_s",  "memory_burst_mb",
    "tx_idle_s",      "tx_burst_s",      "tx_burst_mb_per_s",
    "rx_idle_s",      "rx_burst_s",      "rx_burst_mb_per_s"};

using TwelveMetrics = std::array<double, 12>;

// Burst thresholds (docs/design/resource-usage.md):
// compute is busy above 20% of its capacity (the compute threads on a CPU, the GPU per NVML);
inline constexpr double kComputeBusyThreshold = 0.20;
// memory is in a burst while above the process's floor (its memory before the job's model, data
// and optimizer were set up) by more than 1 MiB;
inline constexpr double kMemoryBurstMarginMb = 1.0;
// the network is in a burst while a collective that moves bytes runs, gaps under 50 us joined.
inline constexpr double kTrafficJoinGapSeconds = 50e-6;

}  // namespace tl::usage
