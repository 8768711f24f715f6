// MemoryDecisions: the plain record of what memory awareness did in a build. The memory controller fills
// it; the end-of-build summary and the report read it without knowing the controller.
#pragma once

#include <cstdint>
#include <string>

namespace headroom {

// Counters for the end-of-build summary and the report.
struct MemoryDecisions {
  int jobs_waited = 0;           // jobs that had to wait for memory at least once
  int64_t wait_ms_total = 0;     // summed time jobs spent waiting for memory
  int cpu_waits = 0;             // jobs held for a CPU beside long compiles at least once (not memory waits)
  int freezes = 0;
  int safety_kills = 0;
  int oom_kills = 0;
  int requeues = 0;
  int over_budget_starts = 0;    // jobs started alone although they did not fit
  uint64_t budget_bytes = 0;
  uint64_t reserve_bytes = 0;    // what admission kept free (smaller under the build guard)
  int guard_stalls = 0;          // times the build guard found the build stalled at its limit
  int guard_kills = 0;           // jobs killed (and requeued) to end such a stall; also in safety_kills
  int limit_failures = 0;        // jobs that failed while the guard's cap was hit during their run, requeued
  int early_starts = 0;          // exclusive jobs started as the jobs before them were ending (AdmissionConfig)
  int parks = 0;                 // such jobs paused (parked) at least once until the memory they needed was free
  std::string guard;             // "build guard: ..." or "no build guard: ...", for the summary
  // Other headroom builds sharing this one's memory (build_ledger.h): the most seen at once and the most they
  // reserved at once; ledger says why there was none ("" when there was one, or no memory decision).
  int other_builds_most = 0;
  uint64_t others_owed_most = 0;
  std::string ledger;
  // Scale-out (docs/scale-out.md), when the build had a remote pool: remote-eligible jobs that ran on the farm,
  // those seen compiling here instead, jobs counted as local, and the most remote jobs at once.
  int remote_jobs = 0;
  int remote_fallbacks = 0;
  int local_jobs = 0;
  int remote_most_at_once = 0;
  bool anything_happened() const {
    return jobs_waited || freezes || safety_kills || oom_kills || requeues || over_budget_starts || remote_jobs ||
           remote_fallbacks;
  }
};

}  // namespace headroom
