// The admission rule: start a ready job only while the memory budget holds, given the latest reading and
// what running jobs still owe. Pure logic: callers pass readings, jobs and the time; nothing is read here.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "headroom/estimator/size.h"
#include "headroom/memory/reading.h"

namespace headroom {

// A running job as admission and the safety net see it.
struct RunningJob {
  uint64_t id = 0;
  std::string class_key;
  uint64_t predicted_peak = 0;  // the estimate it was admitted with (raised after kills).
  uint64_t rss = 0;             // last sampled tree RSS.
  uint64_t peak_rss = 0;        // largest sample so far.
  int64_t started_ms = 0;
  int64_t last_growth_ms = 0;   // when peak_rss last grew noticeably (see MemoryTrack).
  bool frozen = false;
  bool runs_alone = false;      // admitted to run with nothing else (second failure, or over budget).
  bool heavy = false;           // predicted peak at or above the heavy threshold.

  // What it may still allocate: its estimate minus what it already holds.
  uint64_t Owes() const { return predicted_peak > rss ? predicted_peak - rss : 0; }
};

// Keeps a running job's peak_rss / last_growth_ms current from RSS samples.
struct MemoryTrack {
  // Growth below this fraction of the peak is noise (allocator churn), not a rising curve.
  static constexpr double kGrowthFraction = 0.02;
  // A job seen above its estimate gets its estimate raised to this multiple of what it holds.
  static constexpr double kOverrunFactor = 1.25;
  // Records a sample: rss, peak_rss, last_growth_ms, and raises predicted_peak on an overrun.
  static void Observe(RunningJob* job, uint64_t rss, int64_t now_ms);
};

struct Candidate {
  uint64_t id = 0;
  std::string class_key;
  uint64_t predicted_peak = 0;
  bool unknown_heavy = false;   // Estimate::unknown_heavy: its class was never measured.
  bool must_run_alone = false;  // RequeuePolicy asked for it.
  int64_t ready_since_ms = 0;   // for starvation control in PlanTick.
};

struct AdmissionConfig {
  uint64_t budget_bytes = 0;           // --mem-budget resolved to bytes; 0 = the reading's limit.
  uint64_t reserve_bytes = 0;          // --mem-reserve; 0 = max(reserve_fraction x budget, reserve_floor).
  double reserve_fraction = 0.05;
  uint64_t reserve_floor = 512 * kMiB;
  double pressure_some_pct = 10.0;     // PSI some over the short window above this stops admission.
  uint64_t heavy_threshold = 2 * kGiB; // jobs predicted at least this heavy are staggered.
  int64_t stagger_ms = 10'000;         // identical heavy jobs start at least this far apart ...
  double peak_passed_fraction = 0.9;   // ... unless the previous one reached this share of its estimate ...
  int64_t plateau_ms = 5'000;          // ... or its RSS has not grown for this long.
  int64_t starvation_ms = 60'000;      // after the head waited this long, nothing may overtake it.
};

// Why a candidate waits; PlanTick lets lighter jobs overtake a starving head only for some kinds.
enum class WaitKind { kNone, kMemory, kPressure, kFrozen, kAlone, kStagger, kProbe };

struct AdmissionDecision {
  bool admit = false;
  WaitKind wait = WaitKind::kNone;
  bool over_budget = false;  // admitted only for forward progress: nothing runs and it does not fit (warn).
  std::string reason;        // "needs ~4.2 GiB, 1.1 GiB left after running jobs", for status and -d explain.
};

class AdmissionPolicy {
 public:
  explicit AdmissionPolicy(AdmissionConfig config = {}) : config_(config) {}

  // min(reading.limit, --mem-budget); 0 when neither is known (memory control off).
  uint64_t Budget(const MemoryReading& reading) const;
  uint64_t Reserve(uint64_t budget) const;
  // Memory the build can still take now: min(available, budget - sum of running RSS).
  uint64_t Headroom(const MemoryReading& reading, std::span<const RunningJob> running) const;

  // Decides one candidate against the reading and the running jobs (frozen ones included).
  AdmissionDecision Decide(const MemoryReading& reading, std::span<const RunningJob> running,
                           const Candidate& candidate, int64_t now_ms) const;

  struct TickResult {
    std::vector<uint64_t> admitted;    // in admission order.
    std::vector<uint64_t> over_budget; // admitted for forward progress although they do not fit.
    std::string head_reason;           // why the first waiting candidate waits ("" when none waits).
  };
  // One scheduling pass: walks `ready` (priority order) and admits up to `free_slots` jobs, counting each
  // admitted job as running with its full estimate owed so a batch never sees the same headroom twice.
  // Lighter jobs may overtake a waiting head only until it has waited starvation_ms.
  TickResult PlanTick(const MemoryReading& reading, std::span<const RunningJob> running,
                      std::span<const Candidate> ready, int free_slots, int64_t now_ms) const;

  const AdmissionConfig& config() const { return config_; }

 private:
  bool PeakIsBehind(const RunningJob& job, int64_t now_ms) const;
  std::string StaggerWait(std::span<const RunningJob> running, const Candidate& candidate, int64_t now_ms) const;

  AdmissionConfig config_;
};

}  // namespace headroom
