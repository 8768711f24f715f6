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

  // The parts the figures above were made from (0 = unknown or not set), for diagnostics and logs.
  uint64_t mem_total_bytes = 0;       // /proc/meminfo MemTotal (host-wide inside containers)
  uint64_t mem_available_bytes = 0;   // /proc/meminfo MemAvailable
  uint64_t cgroup_max_bytes = 0;      // tightest memory.max / memory.limit_in_bytes over own + ancestors
  uint64_t cgroup_high_bytes = 0;     // tightest v2 memory.high (throttling starts there)
  uint64_t cgroup_usage_bytes = 0;    // usage minus inactive file pages, at the level that binds
  bool pressure_known = false;        // some PSI source was readable

  // Other headroom builds sharing this memory (BuildLedger) that run jobs now: with none of its own running, a
  // build whose next job does not fit waits for them instead of starting it over budget (AdmissionPolicy).
  int other_builds_busy = 0;
};

}  // namespace headroom
