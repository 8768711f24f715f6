// MemoryController: the builder's JobController when memory awareness is on. The adapter between the scheduler
// core (scheduler_core.h: admission, early starts, the safety net, requeues) and edges, the estimator, the meter,
// processes, the build guard, the ledger, and what the user sees about memory.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "headroom/admission/admission_policy.h"
#include "headroom/admission/safety_net.h"
#include "headroom/admission/scheduler_core.h"
#include "headroom/admission/slot_costs.h"
#include "headroom/build/builder.h"
#include "headroom/estimator/estimator.h"
#include "headroom/memory/build_ledger.h"
#include "headroom/memory/job_meter.h"
#include "headroom/memory/memory_probe.h"
#include "headroom/report/memory_decisions.h"

namespace headroom {

class BuildLog;
class BuildTimeline;
class Clock;
class Status;
struct MemoryStatus;

class MemoryController : public JobController {
 public:
  struct Parts {
    MemoryProbe* probe;
    JobMeter* meter;
    Estimator* estimator;
    const BuildLog* build_log;  // the command hash of an edge, as the log computes it
    Status* status;
    const Clock* clock;
    // The machine-wide ledger's directory (build_ledger.h; DefaultLedgerDir()); "" keeps the build to itself.
    std::string ledger_dir = {};
  };

  MemoryController(Parts parts, const MemoryConfig& config, bool explain);

  void BeginPass() override;
  bool MayStart(Edge* edge, size_t running) override;
  JobStartOptions PrepareJob(Edge* edge) override;
  void JobStarted(Edge* edge, JobId id, ProcessRunner* runner) override;
  bool JobFinished(Edge* edge, JobExit* exit) override;
  int TickIntervalMs() const override;
  int IdleRetryMs() const override;
  void Tick(ProcessRunner* runner) override;
  void BuildEnded() override;
  // Jobserver slots (docs/jobserver.md; defined in memory_controller_slots.cc).
  bool MayGrantSlot(Edge* edge, JobId id) override;
  void SlotsChanged(Edge* edge, JobId id, size_t slots) override;

  // Critical-path weight of an edge (BuilderEdgeWeight): 1 each without history; with it, its predicted
  // duration (ms) grown by its memory share, and whether it is too big to run beside another such job.
  EdgeWeight EdgeCost(const Edge* edge);

  // Where jobs, memory samples and decisions are recorded for the summary, trace and report (nullable).
  void set_timeline(BuildTimeline* timeline) { timeline_ = timeline; }

  // Scale-out (docs/scale-out.md), set by RemoteController: an edge that starts on the farm is estimated under
  // its class's and family's remote key (ExecModeKey) with the farm's residual as its prior, and a finished job's
  // peak is learned under the mode it ran in (a fallback's under the local keys). Unset: one mode, as before.
  struct ExecModeHooks {
    std::function<bool(const Edge*)> starts_remote;      // asked when the edge is estimated
    std::function<bool(const Edge*)> ran_remote;         // asked as its job ends, before the history learns it
    std::function<uint64_t(const Edge*)> residual_bytes;  // the prior of a remote job without history
    std::function<std::string(const Edge*)> run_mode;     // as its job ends: TimelineJob::exec_mode
    std::function<void(MemoryStatus*)> status_fields;     // the farm's part of the status line
  };
  void set_exec_mode_hooks(ExecModeHooks hooks) { exec_mode_hooks_ = std::move(hooks); }

  const MemoryDecisions& decisions() const { return decisions_; }
  // True while the build guard caps the build's cgroup (build_guard.h): a job that outgrows its estimate
  // then costs a headroom kill and requeue, never a kernel OOM kill, so admission may bet on a job fitting.
  bool guard_active() const;
  uint64_t budget_bytes() const { return core_.budget_bytes(); }

 private:
  // What the adapter keeps per edge it considered, for as long as the edge waits or runs, beside the core's
  // state of it (scheduler_core.h: estimate, waits, requeues). It keeps no strings: the output and rule are read
  // from the graph, the command is parsed once into the profile below and re-evaluated only for a timeline.
  struct EdgeState {
    // The parsed command (Estimator::Profile, less the prior's text and the keys the core keeps), so a refresh
    // costs history lookups only.
    uint64_t prior_peak_bytes = 0;
    uint64_t store_key = 0;
    uint64_t command_hash = 0;         // as the build log hashes the command
    int32_t last_wait_ms = 0;          // how long it waited before its latest admission (capped at ~24 days)
    ToolFamily prior_family = ToolFamily::kUnknown;
    bool has_hint = false;             // $headroom_mem is set (read from the edge when predicting)
  };
  struct Running {
    Edge* edge = nullptr;
    JobId runner_id = -1;
    int meter_key = 0;                 // also its run key in the core
    bool frozen_by_signal = false;     // SIGSTOP rather than a cgroup freezer
    size_t timeline_job = 0;           // its entry in timeline_, when there is one
    uint64_t guard_limit_hits_at_start = 0;  // BuildGuard::limit_hits() when it started
    const RunningJob* job = nullptr;   // the core's view of it (SchedulerCore::Run), valid while it runs
  };

  // The state of an edge that is waiting or running, made (and tracked by the core) on first use and dropped when
  // it completes.
  EdgeState& StateFor(const Edge* edge);
  // Evaluates the command and bindings the estimate depends on; returns what the core keeps of them.
  CoreJobTraits Describe(const Edge* edge, EdgeState* state);
  // What the estimator reads of an edge; its views point into the graph and `hint` (kept by the caller).
  static JobDescription DescriptionOf(const Edge* edge, const EdgeState& state, std::string* hint);
  static JobProfile ProfileOf(const EdgeState& state, const CoreJobTraits& traits);
  // ProfileOf, keyed per execution mode when the exec-mode hooks say the edge runs (or ran) remote.
  JobProfile ModeProfileOf(const Edge* edge, const EdgeState& state, const CoreJobTraits& traits,
                           bool at_job_end) const;
  // Class key -> its class's and family's " @remote" keys, interned by the estimator (ModeProfileOf).
  mutable std::unordered_map<std::string_view, std::pair<std::string_view, std::string_view>> remote_keys_;
  // Predicts from the profile and the history as it is now.
  Estimate PredictNow(const Edge* edge, const EdgeState& state, const CoreJobTraits& traits);
  // Re-predicts into the core (the estimator learned since the last one).
  void Predict(const Edge* edge, const EdgeState& state);
  // An edge not started yet follows what finished jobs taught since it was first considered.
  void RefreshIfStale(const Edge* edge, const EdgeState& state);
  static const std::string& OutputOf(const Edge* edge);
  MemoryReading Read();
  // The pass's reading when it is at most kReadingReuseMs old, else a fresh one (admission and slot offers).
  const MemoryReading& RecentReading(int64_t now);
  // RecentReading less what other builds sharing this one's memory still owe: what admission may plan on.
  MemoryReading AdmissionReading(int64_t now);
  // RunningJob::compute_bound: a compiler, nvcc or linker that runs here, not on a compile farm.
  bool KeepsALocalCpuBusy(const Edge* edge, const EdgeState& state) const;
  // Says what the core's step decided: explanations, markers, warnings, the head's published need.
  void NoteStep(const Edge* edge, EdgeState& state, const CoreStep& step, int64_t now);
  void NoteAdmitted(const Edge* edge, EdgeState& state, const CoreStep& step, int64_t now);
  // Carries out a freeze, thaw or kill the core applied (the safety net's or the guard's).
  void CarryOut(const CoreAction& action, ProcessRunner* runner);
  void ApplySafetyAction(const SafetyAction& action, ProcessRunner* runner);
  void Resume(const Running& running, ProcessRunner* runner);
  // Stops a job's whole tree (the cgroup freezer, else SIGSTOP to its process group); Resume undoes it.
  void Pause(Running* running, ProcessRunner* runner);
  void WarnAboutCompileServer(const Edge* edge);
  // Parks or resumes each early-started job (AdmissionPolicy::CheckEarlyStart).
  void CheckEarlyStarts(const MemoryReading& reading, int64_t now, ProcessRunner* runner);
  // How often Tick samples: often while an early-started job may be growing into memory not yet free.
  int SampleIntervalMs() const;
  std::vector<RunningJob> RunningJobs() const { return core_.RunningJobs(); }
  Running* FindByKey(uint64_t key);
  bool KilledByHeadroom(const Running& running) const;
  bool HandleMemoryFailure(Edge* edge, const JobMemoryResult& result, MemoryFailureKind kind, uint64_t peak,
                           JobExit* exit);
  void PublishStatus(const MemoryReading& reading);
  void Explain(const std::string& message) const;
  void PrintWarnings();
  // Timeline recording; each does nothing without a timeline.
  void RecordJobStart(Running* running, const Edge* edge, const EdgeState& state, int64_t now);
  void RecordJobEnd(const Running& running, int64_t now, uint64_t peak_bytes, const char* method,
                    const std::string& outcome, int exit_code);
  void RecordSample(const MemoryReading& reading, int64_t now);
  void RecordMarker(const char* kind, const std::string& output, const std::string& detail, int64_t now);

  Parts parts_;
  MemoryConfig config_;
  bool explain_;
  SchedulerCore core_;  // the decisions (scheduler_core.h); this class carries them out
  MemoryDecisions& decisions_ = core_.decisions();
  std::unordered_map<const Edge*, EdgeState> edges_;
  std::map<JobId, Running> running_;  // by runner id; iteration order = start order (ids increase)
  std::unordered_map<int, JobId> runner_of_meter_key_;  // for the core's views (jobserver slots are by runner id)
  int next_meter_key_ = 1;
  int pending_meter_key_ = 0;
  MemoryReading pass_reading_;
  int64_t pass_reading_ms_ = -1;  // when pass_reading_ was taken; -1: read afresh at the next pass
  static constexpr int64_t kReadingReuseMs = 20;
  static constexpr uint64_t kFreshReadingAfterBytes = 32ull << 20;  // a job this large ending frees memory
  int64_t last_tick_ms_ = -1;  // when Tick last sampled
  // --- build guard (build_guard.h): armed in the constructor, checked each tick, released on abort ---
  void ArmGuard(const MemoryReading& first);
  void EnsureGuard();                // arms the guard once, before the first admission decision
  bool guard_considered_ = false;
  MemoryReading first_reading_;      // the reading the budget was fixed from
  void CheckGuard(int64_t now, ProcessRunner* runner);
  void EndKillTurnOnceVictimsEnded();
  RequeueConfig RequeueFor(MemoryFailureKind kind, uint64_t peak) const;
  int64_t guard_stalled_since_ms_ = -1;  // when the current stall began
  static constexpr int64_t kMaxTurnWaitMs = 5000;
  static constexpr int64_t kNestedBuildDeferMs = 2000;
  void ReleaseGuardForAbort();
  // The job failed (not killed by headroom or the kernel) and the guard's limit was hit while it ran, for
  // the first time for this edge: the failure may be the cap's doing (a tmpfs write gets ENOMEM there).
  bool FailedAtGuardLimit(const Edge* edge, const Running& running, const JobExit& exit);
  void ExplainLimitRetry(const Edge* edge, const JobExit& exit, const std::string& decision);
  BuildGuard* guard_ = nullptr;      // owned by the meter; nullptr: no guard
  ProcessRunner* runner_ = nullptr;  // the last runner seen, to continue SIGSTOPped jobs on abort
  bool guard_stalled_ = false;       // the last check found a stall (counts episodes, not ticks)
  BuildTimeline* timeline_ = nullptr;
  ExecModeHooks exec_mode_hooks_;
  bool warned_compile_server_ = false;  // said once a build that a job compiles in sccache's server
  SlotCosts slot_costs_;  // jobserver slots: what each running job's extra slots are charged

  // --- machine-wide ledger (memory_controller_ledger.cc, docs/build-ledger.md) ---
  std::string JobsCgroupPath() const;
  void OpenLedger();
  void PublishToLedger();
  void RefreshOtherBuilds(int64_t now);
  // Holds back of `reading` what the other builds sharing this build's memory still owe.
  void ShareWithOtherBuilds(MemoryReading* reading, int64_t now);
  bool HoldBackForOthers(int64_t now);
  bool explained_idle_limit_ = false;
  // A job running a nested headroom build is counted at what that build still owes (RunningJobs).
  void SizeNestedBuild(const Running& running, RunningJob* job) const;
  void AddOuterJobVariable(JobStartOptions* options) const;
  // "; other headroom builds reserve 1.2 GiB of it" while they do, for a wait's explanation; "" otherwise.
  std::string OtherBuildsNote() const;
  // What other builds should leave free for this build's waiting head (LedgerEntry::waiting_bytes): its estimate
  // while nothing of this build runs or it must run alone after memory failures, else 0. Published when it changes.
  uint64_t NeedOtherBuildsShouldLeave(const Edge* head) const;
  void PublishHeadWait(uint64_t need);
  uint64_t others_waiting_ = 0;     // what other builds' waiting heads need left free (LedgerEntry::waiting_bytes)
  std::unique_ptr<BuildLedger> ledger_;
  LedgerEntry ledger_self_;
  std::map<int, uint64_t> nested_owed_;  // by meter key: what builds nested in that job owe
  uint64_t others_owed_ = 0;
  int other_builds_ = 0;
  int other_builds_busy_ = 0;       // of those, the ones running jobs (as of the last refresh)
  int held_for_others_ = 0;         // what the last admission reading said (0 once the idle wait ran out)
  int64_t idle_since_ms_ = -1;      // since when nothing of this build runs while others do; -1: it runs
  // The longest a build with nothing running waits for other builds to free memory before it starts its next job
  // alone anyway (a stuck or hostile ledger entry must not stop it for good).
  static constexpr int64_t kMaxIdleWaitForOthersMs = 15 * 60 * 1000;
  int64_t others_read_ms_ = -1;
  static constexpr int64_t kLedgerReuseMs = 100;
};

}  // namespace headroom
