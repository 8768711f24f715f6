// SchedulerCore: the job-level scheduling decisions that a real build (MemoryController, the adapter to edges,
// processes, the meter and the guard) and the simulator (sim/simulator.h) both run. Job keys, estimates, memory
// readings and the time go in; starts, waits, parks, freezes, kills and requeues come out. No OS types here.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "headroom/admission/admission_policy.h"
#include "headroom/admission/safety_net.h"
#include "headroom/estimator/estimator.h"
#include "headroom/history/rise_curve.h"
#include "headroom/report/memory_decisions.h"

namespace headroom {

// The caller's name for a job (an edge's id, a simulated job's index) and for one run of it (the build's meter
// key, the simulator's run counter). Run keys must increase with each start: the core keeps runs in start order.
using CoreJobKey = uint64_t;
using CoreRunKey = uint64_t;

// An estimate's figures as the core keeps them (Estimate less its keys and text).
struct EstimateFigures {
  uint64_t peak_bytes = 0;
  int64_t duration_ms = 0;
  EstimateSource source = EstimateSource::kPrior;
  bool unknown_heavy = false;
  bool confident = false;
  RiseCurve rise;
  static EstimateFigures Of(const Estimate& estimate);
};

// What does not change about a job while it waits or runs.
struct CoreJobTraits {
  std::string_view class_key;   // must outlive the job's state (the estimator interns them)
  std::string_view family_key;
  bool compute_bound = false;   // keeps a local CPU busy (RunningJob::compute_bound)
  // Its work runs outside its own processes (a compile in sccache's server): its growth cannot be watched, nor
  // stopped by pausing or killing it, so a guess of its peak is admitted whole, never at a share (IsGuess).
  bool unwatched = false;
};

// One step of an admission walk (SchedulerCore::Consider).
struct CoreStep {
  enum class Kind { kSkipped, kAdmitted, kWaitsForCpu, kWaitsForMemory };
  Kind kind = Kind::kSkipped;  // kSkipped: the pass had stopped or looked at enough candidates
  AdmissionDecision decision;
  bool first_refusal = false;  // no candidate of this pass was refused before it
  bool began_waiting = false;  // a memory wait that began now (counted once per wait)
  bool explain = false;        // the first time this wait (memory or CPU) is to be explained
  int64_t waited_ms = 0;       // admitted: how long it had waited for memory
};

// A change to a running job that the caller carries out on its processes (freeze, thaw, kill).
struct CoreAction {
  enum class Kind { kFreeze, kThaw, kKill, kPark, kClimb, kResume };
  Kind kind;
  CoreRunKey run;
  std::string reason;
  // The safety net's freeze, thaw or kill of a run.
  static CoreAction Of(const SafetyAction& action);
};

// The admission rules under the build guard: a lost bet costs a freeze, a park or a requeue there, never a kernel
// OOM kill, so guesses may be bolder, early starts are made and parked, and rise bets are taken.
AdmissionConfig GuardedAdmission(AdmissionConfig config);

class SchedulerCore {
 public:
  SchedulerCore(const AdmissionConfig& admission, const SafetyConfig& safety = {});

  // Replaces the admission rules (the build guard's arrival makes them bolder); the safety net follows.
  void Configure(const AdmissionConfig& admission) { policy_ = AdmissionPolicy(admission); }
  const AdmissionPolicy& policy() const { return policy_; }
  uint64_t budget_bytes() const { return budget_bytes_; }
  void set_budget_bytes(uint64_t budget) { budget_bytes_ = budget; }
  MemoryDecisions& decisions() { return decisions_; }
  const MemoryDecisions& decisions() const { return decisions_; }
  // What the caller adds to a running job's view before any decision (jobserver slots, nested builds' debts).
  void set_view_adjuster(std::function<void(CoreRunKey, RunningJob*)> adjust) { adjust_view_ = std::move(adjust); }

  // --- jobs and their estimates ---
  bool Tracks(CoreJobKey job) const { return jobs_.count(job) > 0; }
  void Track(CoreJobKey job, const CoreJobTraits& traits);
  // Not settled (its own runs, which change only when it runs, gave no final figures) and made before the
  // estimator's last lesson.
  bool EstimateIsStale(CoreJobKey job, uint64_t generation) const;
  // Records a (re-)prediction made at estimator generation `generation`; an OOM requeue's floor holds.
  void SetEstimate(CoreJobKey job, const EstimateFigures& estimate, uint64_t generation);
  const EstimateFigures& EstimateOf(CoreJobKey job) const { return jobs_.at(job).estimate; }
  // Its estimate when it is tracked, else nullptr (one lookup where Tracks and EstimateOf would make two).
  const EstimateFigures* FindEstimate(CoreJobKey job) const {
    auto it = jobs_.find(job);
    return it == jobs_.end() ? nullptr : &it->second.estimate;
  }
  const CoreJobTraits& TraitsOf(CoreJobKey job) const { return jobs_.at(job).traits; }
  // Whether it keeps a local CPU busy may change while it waits (a compile farm that stopped taking jobs).
  void SetComputeBound(CoreJobKey job, bool compute_bound) { jobs_.at(job).traits.compute_bound = compute_bound; }
  bool MustRunAlone(CoreJobKey job) const { return jobs_.at(job).must_run_alone; }
  // Done with it (completed, or given up): its state and requeue record go.
  void Forget(CoreJobKey job);
  // Only a prior is a guess: measured figures, hints and an OOM requeue's raised floor are evidence.
  bool IsGuess(CoreJobKey job) const;
  // Its estimate is its own completed runs' figure (RunningJob::own_history).
  bool SizedFromOwnRuns(CoreJobKey job) const;
  Candidate CandidateFor(CoreJobKey job, double priority, int64_t now_ms) const;

  // --- admission ---
  // One walk over the ready jobs, best first, against `reading` (what admission may plan on).
  void BeginPass(const MemoryReading& reading, int64_t now_ms);
  bool InPass() const { return pass_.has_value(); }
  // Nothing more can start in this pass, or it refused kAdmissionWalkWindow candidates already.
  bool PassDone() const;
  // Decides the next ready job of the walk; a memory wait is counted, an admission ends the job's wait.
  CoreStep Consider(CoreJobKey job, double priority, int64_t now_ms);
  int waiting_now() const { return waiting_now_; }
  // What the least demanding job that waits for memory would be admitted at (0 when none waits).
  uint64_t LeastWaitingNeed(uint64_t budget) const;

  // --- running jobs ---
  struct Run {
    CoreJobKey job = 0;
    RunningJob view;            // as admission and the safety net see it (id = its run key)
    bool killed = false;        // killed by headroom (the safety net or the guard): on its way out
    bool paused_once = false;   // frozen or parked at some time: its samples no longer trace its rise
    RiseRecorder rise;          // its samples, for the rise curve the history keeps
  };
  // Starts `job` as run `run`: counted as its admission counted it (recomputed when it had no decision).
  Run& Start(CoreJobKey job, CoreRunKey run, double priority, int64_t now_ms);
  // A memory sample of a run: `rise_ms` is how far into its work it is (its wall time in a real build).
  void Observe(CoreRunKey run, uint64_t bytes, int64_t now_ms, int64_t rise_ms);
  Run* FindRun(CoreRunKey run);
  const std::map<CoreRunKey, Run>& runs() const { return runs_; }
  // Views of the running jobs, oldest first, as the caller adjusts them.
  std::vector<RunningJob> RunningJobs() const;
  // Parks or resumes each early-started job (AdmissionPolicy::CheckEarlyStart); the caller pauses or resumes it.
  std::vector<CoreAction> CheckEarlyStarts(const MemoryReading& reading, int64_t now_ms);
  // The safety net's actions that change something, already applied to the views; the caller carries them out.
  std::vector<CoreAction> SafetyActions(const MemoryReading& reading, int64_t now_ms);
  // Applies one freeze, thaw or kill (the safety net's, or the guard's kill); false when it changes nothing.
  bool Apply(const SafetyAction& action, int64_t now_ms);
  // How often a caller should sample: often while an early start may grow into memory not yet free.
  int SampleIntervalMs(int64_t now_ms) const;
  // The run ended (however): it leaves the running set.
  Run End(CoreRunKey run);
  // An ended run failed for memory: retry (raised, perhaps alone) or give up. `failures` so far are counted here.
  RequeueDecision MemoryFailure(CoreJobKey job, MemoryFailureKind kind, uint64_t peak, const RequeueConfig& config);
  int LimitFailures(CoreJobKey job) const;
  int MemoryFailures(CoreJobKey job) const;
  uint64_t RequeueFloor(CoreJobKey job) const;

 private:
  struct JobState {
    CoreJobTraits traits;
    EstimateFigures estimate;
    uint32_t estimate_generation = 0;
    bool settled = false;
    int64_t waiting_since_ms = -1;
    bool must_run_alone = false;
    bool explained_wait = false;
    bool explained_cpu_wait = false;
    bool early_start = false;
    uint64_t counted_peak = 0;
  };
  struct Requeue {
    uint64_t floor = 0;
    int memory_failures = 0;
    int limit_failures = 0;
  };
  JobState& StateOf(CoreJobKey job) { return jobs_.at(job); }
  // The public lookups' work on a state already found (an admission walk asks them for every candidate).
  bool IsGuess(CoreJobKey job, const JobState& state) const;
  bool SizedFromOwnRuns(CoreJobKey job, const JobState& state) const;
  Candidate CandidateFor(CoreJobKey job, const JobState& state, double priority, int64_t now_ms) const;
  void NoteAdmitted(JobState& state, const AdmissionDecision& decision, int64_t now_ms, CoreStep* step);

  AdmissionPolicy policy_;
  SafetyNet safety_;
  uint64_t budget_bytes_ = 0;
  MemoryDecisions decisions_;
  std::function<void(CoreRunKey, RunningJob*)> adjust_view_;
  std::unordered_map<CoreJobKey, JobState> jobs_;
  std::unordered_map<CoreJobKey, Requeue> requeues_;
  std::map<CoreRunKey, Run> runs_;  // start order
  std::optional<AdmissionPass> pass_;
  int pass_waits_ = 0;
  int waiting_now_ = 0;
};

}  // namespace headroom
