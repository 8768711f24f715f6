// The admission rule: start a ready job only while the memory budget holds, given the latest reading and
// what running jobs still owe. Pure logic: callers pass readings, jobs and the time; nothing is read here.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "headroom/history/rise_curve.h"
#include "headroom/memory/reading.h"
#include "headroom/util/byte_size.h"

namespace headroom {

enum class EstimateSource;  // estimator/estimator.h

// Whose live memory bounds a candidate's estimate from below (AdmissionPolicy::CountedPeak): an estimate taken
// from other jobs (its class's finished members, its family's, or a guess) is only as good as what they showed,
// and running members that already hold more show more. An estimate from the job's own runs or a hint: none.
enum class KinScope { kNone, kClass, kFamily };
KinScope KinScopeOf(EstimateSource source);

// A running job as admission and the safety net see it.
struct RunningJob {
  uint64_t id = 0;
  std::string class_key;
  std::string family_key;       // classes that differ only in defines: one probe tells about all of them.
  uint64_t predicted_peak = 0;  // the estimate it was admitted with (raised after kills).
  uint64_t rss = 0;             // last sampled tree RSS.
  uint64_t peak_rss = 0;        // largest sample so far.
  int64_t started_ms = 0;
  int64_t last_growth_ms = 0;   // when peak_rss last grew noticeably (see MemoryTrack).
  uint64_t growth_mark = 0;     // peak_rss at last_growth_ms: growth is measured from here, not per sample.
  int64_t expected_end_ms = -1; // started_ms + its predicted duration; -1 = unknown (no duration in history).
  bool frozen = false;
  bool runs_alone = false;      // admitted to run with nothing else (second failure, or over budget).
  bool heavy = false;           // predicted peak at or above the heavy threshold.
  bool overran = false;         // went past its estimate at least once (MemoryTrack raised it).
  // Started early (AdmissionConfig::early_starts): until the memory it needs is free it may be parked, i.e.
  // frozen by admission rather than by the safety net, which leaves parked jobs alone.
  bool early = false;
  bool parked = false;
  int64_t parked_since_ms = -1; // when it was last parked; -1: never.
  int64_t parked_for_ms = 0;    // parked time before that: its pace counts only the time it could climb.
  RiseCurve rise;               // how its memory rose in earlier runs (unknown: it may hold its peak at once).
  bool own_history = false;     // sized from this edge's own completed runs (not its class's, a prior or a hint).
  bool compute_bound = false;   // a compiler, nvcc or linker: it keeps a CPU busy (AdmissionConfig::cpus).
  double priority = 0;          // its critical-path weight when it started (Candidate::priority).

  // What it may still allocate: its estimate minus what it already holds.
  uint64_t Owes() const { return predicted_peak > rss ? predicted_peak - rss : 0; }

  // An early start's pauses by admission (AdmissionPolicy::CheckEarlyStart's steps; the caller freezes and thaws
  // the processes). Park returns whether this is the job's first park: the summary counts jobs parked, and a
  // freeze by the safety net before it is no park.
  bool Park(int64_t now_ms);
  // Thawed to climb into room freed beside it; still early, so it may be parked again.
  void Climb(int64_t now_ms);
  // Thawed for good (its whole remaining growth fits, or the safety net thaws it): no longer early, and a plateau
  // is timed from here (one while it was frozen proved nothing).
  void Resume(int64_t now_ms);
  // How long it could climb since it started: its parked time left out (AdmissionPolicy::ParkMargin's pace).
  int64_t ClimbingMs(int64_t now_ms) const;
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
  std::string family_key;
  uint64_t predicted_peak = 0;
  bool unknown_heavy = false;   // Estimate::unknown_heavy: its family was never measured.
  bool from_prior = false;      // the estimate is a guess from the command line: nothing of its family was measured.
  bool measured = false;        // Estimate::confident: measured runs of this edge or of a well-sampled class.
  bool must_run_alone = false;  // RequeuePolicy asked for it.
  int64_t ready_since_ms = 0;   // for starvation control in PlanTick.
  int64_t expected_ms = 0;      // predicted duration; 0 = unknown.
  RiseCurve rise;               // how its memory rose in earlier runs.
  bool own_history = false;     // the estimate comes from this edge's own completed runs.
  KinScope kin = KinScope::kNone;  // whose running members' memory bounds its estimate (KinScopeOf).
  bool compute_bound = false;   // a compiler, nvcc or linker (IsComputeBound).
  double priority = 0;          // critical-path weight, as the ready queue orders it: higher runs first.
};

// The default --mem-reserve: max(fraction x budget, min(floor, floor cap x budget)). The floor keeps small
// machines off their last byte; its cap keeps it from serialising a small container's build.
inline constexpr double kDefaultReserveFraction = 0.05;
inline constexpr uint64_t kDefaultReserveFloor = 512 * kMiB;
inline constexpr double kDefaultReserveFloorMaxFraction = 0.125;
// Under the build guard the reserve only absorbs estimate errors until the safety net acts: the guard's cap,
// not the reserve, stands between an overshoot and the kernel. A smaller one lets a medium job sit beside a
// heavy one (docs/scheduling.md, "The reserve under the guard", with what it measured).
inline constexpr double kGuardedReserveFraction = 0.02;
inline constexpr uint64_t kGuardedReserveFloor = 256 * kMiB;
inline constexpr double kGuardedReserveFloorMaxFraction = 0.04;
// The defaults above in words, built from the same constants, for -h: "max(5% of budget, min(512 MiB, 12.5%
// of budget))" + between + "under the build guard max(2% of budget, min(256 MiB, 4% of budget))".
std::string DescribeDefaultReserve(std::string_view between = "; ");

struct AdmissionConfig {
  uint64_t budget_bytes = 0;           // --mem-budget resolved to bytes; 0 = the reading's limit.
  // --mem-reserve; 0 = max(reserve_fraction x budget, min(reserve_floor, reserve_floor_max_fraction x budget)),
  // with the guarded_* figures instead when `guarded`.
  uint64_t reserve_bytes = 0;
  double reserve_fraction = kDefaultReserveFraction;
  uint64_t reserve_floor = kDefaultReserveFloor;
  double reserve_floor_max_fraction = kDefaultReserveFloorMaxFraction;
  double guarded_reserve_fraction = kGuardedReserveFraction;
  uint64_t guarded_reserve_floor = kGuardedReserveFloor;
  double guarded_reserve_floor_max_fraction = kGuardedReserveFloorMaxFraction;
  double pressure_some_pct = 10.0;     // PSI some over the short window above this stops admission.
  uint64_t heavy_threshold = 2 * kGiB; // jobs predicted at least this heavy are staggered.
  int64_t stagger_ms = 10'000;         // identical heavy jobs start at least this far apart ...
  // ... unless their estimate could be this much too low for every climbing one of them at once and still fit.
  double joint_overshoot = 0.5;
  double peak_passed_fraction = 0.9;   // ... unless the previous one reached this share of its estimate ...
  int64_t plateau_ms = 5'000;          // ... or its RSS has not grown for this long.
  // A plateau proves a peak only for a job holding at least this share of its estimate: a heavy compile
  // idling in its preprocessing step (a few hundred MiB of an 8 GiB estimate) has not peaked.
  double settled_min_fraction = 0.25;
  // ... and a job sized from its own earlier runs must be this close to them: it will reach what they reached.
  double settled_own_history_fraction = 0.9;
  // ... and a job that outgrew its estimate must have held still this many plateaus.
  double overrun_plateau_factor = 4.0;
  int64_t starvation_ms = 60'000;      // after the head waited this long, nothing may overtake it.
  // A prior is a guess, and a guess above what the build may use at all must not make a job "too big": it is
  // capped at this share of (budget - reserve). Without a build guard the cap is the whole of it (the job
  // then simply waits for room); under the guard, where a lost bet costs a freeze or a requeue and never a
  // kernel OOM kill, admission bets on half, so lighter work keeps the other cores busy while the probe runs.
  double unguarded_prior_cap = 1.0;
  double guarded_prior_cap = 0.5;
  // An unmeasured heavy family is probed: its members wait for the first one to peak. Under the guard this many
  // members may climb at once when their guesses fit, so a small box's second core is not idle while the probe
  // climbs (a real nvcc job peaks late, in ptxas); a lost bet costs a freeze or a requeue of the younger one.
  int guarded_probe_members = 2;
  // More members may climb beside the probe while a guess probe_joint_overshoot too low for all of them at once
  // would still fit.
  double probe_joint_overshoot = 1.0;
  bool guarded = false;                // the build runs under a build guard (see memory/build_guard.h).
  // The CPUs the build may use (affinity and cgroup quota); 0 = not known. With -j above it, a long compute-bound
  // job (see IsLongCompute) starts only while fewer such jobs run than there are CPUs: a third nvcc compile on 2
  // CPUs only slows the other two, and whichever of the three comes last then runs alone at the end. Short jobs
  // and jobs of unknown tools still fill the -j slots.
  int cpus = 0;
  int64_t long_job_ms = 10'000;
  // While a long compile at least as urgent (Candidate::priority) runs, a short compute-bound job starts only on
  // a CPU no compile keeps busy: started beside them it only shares their CPUs, ends early and leaves the longest
  // compile to run alone, and slower, at the end, where it could have filled the idle CPU (ninja -jN with N =
  // CPUs gets this by its order). More urgent short jobs (a chain after them) still start.
  bool short_compiles_fill_idle_cpus = true;
  bool hold_for_exclusive_head = true; // keep memory for an exclusive head from jobs that would delay it (HeadHold).
  // Early starts of an exclusive head: a measured head whose memory is predicted free (HeadHold::start_ms)
  // within early_start_lead x its own predicted duration starts now; its memory grows while the jobs before
  // it end. Each tick then parks it (freezes it) while what it needs is still held by others, and resumes it
  // once it is free (CheckEarlyStart). Needs a caller that ticks often and parks: MemoryController under the
  // build guard turns it on; the simulator does not model parking and leaves it off.
  bool early_starts = false;
  double early_start_lead = 0.3;
  // It is parked once what is left beside the others is under twice the reserve, or under what it climbs in
  // park_lookahead_ms at its mean pace so far, if more: a tick late under CPU load (sampling is every 20 ms) must
  // not find a fast climber already at the cap, where every job of the build waits and the guard kills one.
  int64_t park_lookahead_ms = 100;
  // Rise bets: a running job whose history says how its memory rises (RiseCurve) is counted, for a candidate
  // with a predicted duration, at what it may hold by the time the candidate ends rather than at its whole
  // estimate: a short job fits beside a long one that is still ramping. The candidate's duration is stretched
  // by rise_horizon_factor and the running job's shortened by rise_time_margin (either may run at another pace
  // than before). A lost bet runs into the reserve and then the safety net, so only under the build guard.
  // 1.2 and 0.95, not the wider 1.5 and 0.85 tried first: warm jobs ran within 1.00-1.10x of their measured
  // times, and the wider margins kept medium jobs from a heavy job's ramp (docs/scheduling.md, "Rise bets").
  bool rise_bets = false;
  double rise_horizon_factor = 1.2;
  double rise_time_margin = 0.95;
  // A candidate sized from its kin needs at least this multiple of what a running member of its kin holds.
  double kin_floor_factor = 1.0;
};

// An admission walk over the ready queue stops after this many refused candidates (MemoryController and
// RemoteController); -t plan's simulator looks at this many ready candidates a tick. Past it, describing each
// edge would keep a state for it until it ran (a cold build of 10k ready jobs held 10k) and cost a walk per start;
// the queue is in priority order, so what is left out would have come last anyway.
inline constexpr int kAdmissionWalkWindow = 256;

// Why a candidate waits; PlanTick lets lighter jobs overtake a starving head only for some kinds.
enum class WaitKind { kNone, kMemory, kPressure, kFrozen, kAlone, kStagger, kProbe, kCpu };

struct AdmissionDecision {
  bool admit = false;
  WaitKind wait = WaitKind::kNone;
  bool over_budget = false;  // admitted only for forward progress: nothing runs and it does not fit (warn).
  std::string reason;        // "needs ~4.2 GiB, 1.1 GiB left after running jobs", for status and -d explain.
  bool early_start = false;  // admitted before its memory is free (AdmissionConfig::early_starts): mark it early.
  uint64_t counted_peak = 0; // admitted: what admission counted for it (CountedPeak), the running job's estimate.
};

class AdmissionPolicy {
 public:
  explicit AdmissionPolicy(AdmissionConfig config = {}) : config_(config) {}

  // min(reading.limit, --mem-budget); 0 when neither is known (memory control off).
  uint64_t Budget(const MemoryReading& reading) const;
  uint64_t Reserve(uint64_t budget) const;
  // Whether a head that does not fit now could run once other builds' jobs end (see Decide's forward progress).
  static bool CouldFitOnceOthersEnd(const MemoryReading& reading, uint64_t budget, uint64_t peak, uint64_t reserve);
  // What admission counts for a candidate: its estimate, or for a guess from the command line at most the
  // share of budget - reserve that the prior cap allows (see AdmissionConfig::guarded_prior_cap).
  // `outside` is what the budget holds besides the build's jobs (headroom itself, pip, the rest of a container:
  // OutsideUsage): the cap is a share of what is left for the jobs, so that two capped guesses fit beside it.
  uint64_t AdmittedPeak(uint64_t predicted_peak, bool from_prior, uint64_t budget, uint64_t outside = 0) const;
  uint64_t AdmittedPeak(const Candidate& candidate, uint64_t budget, uint64_t outside = 0) const {
    return AdmittedPeak(candidate.predicted_peak, candidate.from_prior, budget, outside);
  }
  // What the budget loses to neither the running jobs nor free memory: budget - their RSS - headroom.
  uint64_t OutsideUsage(const MemoryReading& reading, std::span<const RunningJob> running) const;
  // What admission counts for a candidate beside `running`, and what it is counted for once it runs: its
  // AdmittedPeak, raised to what running members of its kin already hold (Candidate::kin; the finished members
  // its estimate came from are biased to the short and often lighter ones: flash-attn's forward kernels finish
  // first and weigh 0.6x the backward ones) and, for an unmeasured heavy family, a tenth above what its
  // climbing probe reached.
  uint64_t CountedPeak(const Candidate& candidate, std::span<const RunningJob> running, uint64_t budget,
                       uint64_t outside = 0) const;
  // Memory the build can still take now: min(available, budget - sum of running RSS).
  uint64_t Headroom(const MemoryReading& reading, std::span<const RunningJob> running) const;

  // Decides one candidate against the reading and the running jobs (frozen ones included).
  AdmissionDecision Decide(const MemoryReading& reading, std::span<const RunningJob> running,
                           const Candidate& candidate, int64_t now_ms) const;

  struct TickResult {
    std::vector<uint64_t> admitted;    // in admission order.
    std::vector<uint64_t> counted;     // parallel to admitted: AdmissionDecision::counted_peak.
    std::vector<uint64_t> over_budget; // admitted for forward progress although they do not fit.
    std::string head_reason;           // why the first waiting candidate waits ("" when none waits).
  };
  // One scheduling pass: walks `ready` (priority order) and admits up to `free_slots` jobs, counting each
  // admitted job as running with its full estimate owed so a batch never sees the same headroom twice.
  // Lighter jobs may overtake a waiting head only until it has waited starvation_ms.
  TickResult PlanTick(const MemoryReading& reading, std::span<const RunningJob> running,
                      std::span<const Candidate> ready, int free_slots, int64_t now_ms) const;

  // What to do with a running early-started job now (see AdmissionConfig::early_starts).
  // kClimb: a parked early start is thawed to climb into room that freed up, and stays early (it may be parked
  // again); kResume: its whole remaining growth fits, it is thawed for good.
  enum class EarlyStep { kNone, kPark, kClimb, kResume, kWon };
  struct EarlyCheck {
    EarlyStep step = EarlyStep::kNone;
    std::string reason;
  };
  // The room it has is what the budget leaves after every other job's RSS and what they still owe. Parked
  // when that falls below its ParkMargin (the guard's cap sits a little under the budget, and a fast
  // job grows between two ticks); resumed, and the bet won, once its own remaining growth fits above the
  // reserve. Parked, it climbs again once the room is twice its park margin: memory that frees up beside it
  // would otherwise stay idle, since it is counted at its whole estimate and nothing else may take it.
  // `job` must be an element of `running`.
  EarlyCheck CheckEarlyStart(const MemoryReading& reading, std::span<const RunningJob> running, const RunningJob& job,
                             int64_t now_ms) const;
  // How close to what the others leave an early start may climb before it is parked (park_lookahead_ms).
  uint64_t ParkMargin(const RunningJob& job, uint64_t reserve, int64_t now_ms) const;

  // What a running job may still allocate: its estimate minus what it holds while it may still be climbing;
  // once it has settled (see HasSettled), only what it gave back since its peak. Estimates cover the worst
  // member of a class; a settled job has shown which member it is. Its noise is the reserve's business, and
  // growth beyond 2% makes it unsettled again, owing its estimate once more.
  uint64_t Owed(const RunningJob& job, int64_t now_ms) const;
  // What it may still allocate by `until_ms`, by its rise curve (AdmissionConfig::rise_bets); Owed when the bet
  // is off, the curve unknown, the job past its estimate or already above its curve, or until_ms < 0.
  uint64_t OwedBy(const RunningJob& job, int64_t now_ms, int64_t until_ms) const;
  // When a candidate admitted now is taken to have ended, for OwedBy: -1 when it has no predicted duration or
  // rise bets are off.
  int64_t BetHorizon(const Candidate& candidate, int64_t now_ms) const;
  // A compute-bound job predicted to run at least long_job_ms, or with no duration yet and a heavy estimate.
  bool IsLongCompute(bool compute_bound, int64_t duration_ms, uint64_t estimate) const;
  // A running one also once it has run long_job_ms.
  bool IsLongCompute(const RunningJob& job, int64_t now_ms) const;
  // Why a compute-bound candidate must wait for a CPU (AdmissionConfig::cpus), or "" when it may start.
  std::string CpuWait(std::span<const RunningJob> running, const Candidate& candidate, int64_t now_ms) const;
  // Its RSS has not grown noticeably for plateau_ms.
  bool HasPlateaued(const RunningJob& job, int64_t now_ms) const;
  // Past its peak: reached peak_passed_fraction of its estimate, or plateaued.
  bool PeakIsBehind(const RunningJob& job, int64_t now_ms) const;
  // Past its peak with the evidence strong enough to stop reserving its estimate: plateaued, not frozen
  // (a frozen job cannot grow, its plateau proves nothing), never past its estimate (its model is wrong,
  // so is any guess that it stopped) and holding at least settled_min_fraction of it.
  bool HasSettled(const RunningJob& job, int64_t now_ms) const;

  const AdmissionConfig& config() const { return config_; }

 private:
  // Why the candidate must wait for a job of its class to peak, or of its unmeasured family ("" when it need
  // not); `peak` is what admission counts for it and `spare_after` the headroom left above the reserve once it
  // is admitted.
  std::string StaggerWait(std::span<const RunningJob> running, const Candidate& candidate, uint64_t peak,
                          uint64_t spare_after, int64_t now_ms) const;

  AdmissionConfig config_;
};

// Memory kept for an exclusive head (one needing more than half of budget - reserve: no two such jobs run
// together, so they form one chain and each one's wait delays the whole chain). From the running jobs'
// predicted ends, the head fits at `start_ms`; a later candidate may start only if it ends before then or
// fits in `spare`, what the head leaves over at that time (EASY backfilling, for this head only).
struct HeadHold {
  uint64_t head_id = 0;
  uint64_t head_need = 0;  // what admission counts for the head.
  int64_t start_ms = 0;
  uint64_t spare = 0;
};

// When an exclusive head that waits for memory can start, if the running jobs end as predicted: nullopt when
// it is not exclusive or some job it waits for has no predicted end (then nothing is held for it).
std::optional<HeadHold> PlanHeadHold(const AdmissionPolicy& policy, const MemoryReading& reading,
                                     std::span<const RunningJob> running, const Candidate& head, int64_t now_ms);

// One walk over the ready candidates in priority order, admitting as it goes; PlanTick and MemoryController
// both decide through it. The first candidate that waits for memory is the head: later candidates may
// overtake it until it has waited starvation_ms; after that nothing may, so memory that frees up is its.
// An exclusive head also keeps memory from later candidates that would delay its predicted start (HeadHold).
// (Doing that for every head was measured worse: docs/scheduling.md, "Tried and not kept for every head".)
class AdmissionPass {
 public:
  AdmissionPass(const AdmissionPolicy& policy, const MemoryReading& reading, std::vector<RunningJob> running,
                int64_t now_ms);

  // Decides the next candidate; an admitted one counts as running (its whole estimate owed) for the rest.
  AdmissionDecision Consider(const Candidate& candidate);
  // Nothing more can start in this pass (alone, frozen, pressure, or a starved head).
  bool stopped() const { return stopped_; }
  // Why the head waits ("" while none does).
  const std::string& head_reason() const { return head_reason_; }

 private:
  void NoteHead(const Candidate& head, const AdmissionDecision& decision);
  void AddRunning(const Candidate& candidate, bool over_budget, uint64_t counted_peak);
  // Whether an admissible candidate would delay the held head; takes its share of the spare if it may start.
  std::optional<AdmissionDecision> HoldFor(const Candidate& candidate);
  // The held head starts now when it may start early (AdmissionConfig::early_starts).
  std::optional<AdmissionDecision> StartEarly(const Candidate& head, const AdmissionDecision& waiting);

  const AdmissionPolicy& policy_;
  const MemoryReading reading_;  // a copy: a pass may outlive the reading it was given
  std::vector<RunningJob> running_;
  int64_t now_ms_;
  bool head_seen_ = false;        // the first candidate waiting for memory was seen.
  bool head_reason_seen_ = false;
  bool stopped_ = false;
  AdmissionDecision stop_decision_;
  std::string head_reason_;
  std::optional<HeadHold> hold_;
};

}  // namespace headroom
