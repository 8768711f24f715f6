// Plain data shared by the memory probe (which produces it) and the admission policy (which consumes it).
#pragma once

#include <cstdint>

namespace headroom {

// One look at how much memory the build may use right now. Bytes; 0 means "unknown".
struct MemoryReading {
  int64_t taken_at_ms = 0;         // Clock::NowMs() when read.
  uint64_t limit_bytes = 0;        // effective limit: min(MemTotal, tightest cgroup limit).
  uint64_t available_bytes = 0;    // min(MemAvailable, limit - cgroup usage without reclaimable file pages).
  uint64_t used_bytes = 0;         // limit - available: what is in use now.
  double pressure_some_pct = 0.0;  // memory PSI "some" over a short window (percent of wall time stalled).
  double pressure_full_pct = 0.0;
  bool from_cgroup = false;        // the cgroup was tighter than the machine.
};

}  // namespace headroom
