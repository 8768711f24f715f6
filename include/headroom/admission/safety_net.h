// The safety net for wrong predictions: freeze the youngest jobs when memory runs critically low, thaw them
// when it frees, kill-and-requeue the youngest frozen job as a last resort; and the requeue policy for
// jobs that were OOM-killed or killed by the net. Pure logic: the caller applies the actions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "headroom/admission/admission_policy.h"
#include "headroom/memory/reading.h"

namespace headroom {

struct SafetyConfig {
  uint64_t critical_bytes = 0;   // headroom below this is critical; 0 = half the admission reserve.
  int64_t kill_grace_ms = 2'000; // critical this long with only the oldest job unfrozen: kill.
  // Headroom below this fraction of critical_bytes kills at once (growth outruns the grace period).
  double kill_now_fraction = 0.5;
  // Jobs whose RSS grew this recently count as growing: all of them freeze at once when critical.
  int64_t growing_within_ms = 1'000;
};

struct SafetyAction {
  enum class Kind { kFreeze, kThaw, kKill };
  Kind kind;
  uint64_t job_id;
  std::string reason;
};

class SafetyNet {
 public:
  SafetyNet(const AdmissionPolicy& admission, SafetyConfig config = {}) : admission_(admission), config_(config) {}

  // `running` is ordered oldest first. Critical: freezes every growing job but the oldest (or else the
  // youngest unfrozen one); still critical with all but the oldest frozen: kills the youngest. Never
  // freezes the oldest job, and thaws it at once if frozen (it must always progress). Returns the actions
  // to apply now, in order. Keeps a little state (how long memory has been critical), hence not const.
  std::vector<SafetyAction> Decide(const MemoryReading& reading, std::span<const RunningJob> running,
                                   int64_t now_ms);

  uint64_t CriticalBytes(uint64_t budget) const;

 private:
  const AdmissionPolicy& admission_;
  SafetyConfig config_;
  int64_t critical_since_ms_ = -1;
};

// The build guard found the build stalled at its limit (build_guard.h): which running job to kill and
// requeue. `running` is ordered oldest first. The youngest job holding at least `meaningful_bytes` (killing
// a job that holds almost nothing frees almost nothing), else the youngest; the oldest only when it runs
// alone (then it cannot fit at all). nullopt while an earlier kill is still freeing its memory.
std::optional<uint64_t> ChooseGuardVictim(std::span<const RunningJob> running, bool kill_in_flight,
                                          uint64_t meaningful_bytes);

struct RequeueConfig {
  int max_attempts = 3;           // total runs allowed; the last ones run alone.
  double raise_factor = 1.5;      // the new estimate is at least the observed peak times this.
};

struct RequeueDecision {
  enum class Kind { kRetry, kRetryAlone, kGiveUp };
  Kind kind;
  uint64_t new_estimate = 0;
  std::string message;  // for kGiveUp the build error; otherwise a one-line notice.
};

// How a job ended for memory: the kernel's OOM killer; headroom's kill (the safety net or the build guard);
// or it failed while the build guard's cap refused a charge made inside a system call (a write to a tmpfs
// file gets ENOMEM there rather than waiting; build_guard.h, limit_hits()).
enum class MemoryFailureKind { kKernelOomKill, kHeadroomKill, kFailedAtLimit };

// Decides what to do with a job that ended for memory. `failures` counts this failure (1 on the first).
// The estimate never goes down.
RequeueDecision DecideRequeue(int failures, uint64_t observed_peak, uint64_t previous_estimate, uint64_t budget,
                              MemoryFailureKind kind, const RequeueConfig& config = {});
// The same, for a kill: by the kernel's OOM killer, or else by headroom.
RequeueDecision DecideRequeue(int failures, uint64_t observed_peak, uint64_t previous_estimate, uint64_t budget,
                              bool killed_by_kernel, const RequeueConfig& config = {});

}  // namespace headroom
