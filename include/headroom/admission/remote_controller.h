// RemoteController: the scale-out layer over the memory controller (docs/scale-out.md). It wraps the builder's
// JobController: remote-eligible jobs (exec_mode.h) take a slot of the remote pool, other jobs count against the
// local job cap, a remote job whose tree grows past its residual is seen falling back (a warning, its slot given
// back, and remote-eligible jobs count as local until one completes on the farm), a remote job that exits with
// its launcher's code for a farm failure is retried once here (unless strict), and it keeps the counts the
// summary prints. Memory admission, sampling and the safety net stay the inner controller's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "headroom/admission/admission_policy.h"
#include "headroom/admission/remote_jobs.h"
#include "headroom/build/builder.h"
#include "headroom/estimator/exec_mode.h"

namespace headroom {

class BuildTimeline;
class Clock;
class Status;
struct MemoryStatus;

// Running jobs' process-tree sizes (bytes), as the inner controller's JobMeter sampled them: its CurrentBytes and
// PeakSoFar. Either may be empty (no measurement: nothing is seen falling back while it runs).
struct JobSizes {
  std::function<uint64_t(JobId)> current;
  std::function<uint64_t(JobId)> peak;
};

struct RemoteConfig {
  size_t pool_depth = 0;    // the farm's slots (--remote-jobs, else the launcher's configuration)
  size_t local_cap = 0;     // LocalJobCap(-j, depth, cores): applies once the build has a remote-eligible job
  LauncherSettings launchers;
  uint64_t default_residual_bytes = 128ull << 20;  // before any job completed remote in this build
  // --strict-remote: a launcher's farm failure (IsInfrastructureExit) fails the job as ninja would report it,
  // instead of being retried on this machine.
  bool strict_remote = false;
};

class RemoteController : public JobController {
 public:
  // `inner` decides memory; `sizes` reads running jobs' tree sizes, sampled by the inner Tick.
  RemoteController(JobController* inner, JobSizes sizes, Status* status, RemoteConfig config);

  void BeginPass() override {
    pass_refusals_ = 0;
    inner_->BeginPass();
  }
  bool MayStart(Edge* edge, size_t running) override;
  // A job retried after a farm failure gets its launcher's local switch (LocalRetryEnvironment).
  JobStartOptions PrepareJob(Edge* edge) override;
  void JobStarted(Edge* edge, JobId id, ProcessRunner* runner) override;
  bool JobFinished(Edge* edge, JobExit* exit) override;
  int TickIntervalMs() const override { return inner_->TickIntervalMs(); }
  int IdleRetryMs() const override { return inner_->IdleRetryMs(); }
  void Tick(ProcessRunner* runner) override;
  bool MayGrantSlot(Edge* edge, JobId id) override { return inner_->MayGrantSlot(edge, id); }
  void SlotsChanged(Edge* edge, JobId id, size_t slots) override { inner_->SlotsChanged(edge, id, slots); }
  void BuildEnded() override { inner_->BuildEnded(); }

  // Marks each remote job seen running here ("remote-fallback") on the timeline, for --trace and --report. Jobs
  // that ran on the farm are not marked (one marker per job would drown the memory decisions). Both nullable.
  void set_timeline(BuildTimeline* timeline, const Clock* clock) {
    timeline_ = timeline;
    clock_ = clock;
  }

  // For the memory controller's per-mode estimates (MemoryController::ExecModeHooks): whether `edge` is estimated
  // as a remote job now (remote-eligible, a job of its engine completed on the farm in this build, the farm not
  // suspect, not a local retry), whether the job ending now ran
  // there (asked from inside JobFinished), and the residual a remote job of its engine is charged.
  bool EstimatesRemote(const Edge* edge);
  bool RanRemote(const Edge* edge) const { return finishing_edge_ == edge && finishing_ran_remote_; }
  // The same for the trace and report: "remote (distcc)", "fell back (distcc)" or "local".
  std::string RunMode(const Edge* edge) const { return finishing_edge_ == edge ? finishing_mode_ : std::string(); }
  uint64_t ResidualFor(const Edge* edge) { return Residual(*ClassOf(edge).engine); }

  const RemoteCounts& counts() const { return remote_.counts(); }
  // The status line's farm field: jobs on the pool and its slots, once the build has a remote-eligible job.
  void FillStatus(MemoryStatus* status) const;
  // Remote-eligible jobs are being run as local ones: one fell back and none has completed remote since.
  bool farm_suspect() const { return farm_suspect_; }
  size_t local_running() const { return local_running_; }

 private:
  // What the controller keeps per edge: small, as a large build asks about every edge (its priorities read
  // every edge's estimate, which asks EstimatesRemote). `engine` points into engines_ ("" when local).
  struct EdgeExec {
    ExecMode mode = ExecMode::kLocal;
    const std::string* engine = nullptr;
  };
  // Classifies the edge's command (ClassifyExecMode); `warn` says a bad headroom_exec value once.
  EdgeExec Classify(const Edge* edge, bool warn);
  // The pool, the local cap, then the memory controller's admission.
  bool MayStartNow(Edge* edge, size_t running);
  // Classify, kept for an edge that is ready or running until its job finishes.
  EdgeExec ClassOf(const Edge* edge);
  // Whether a remote-eligible job starting now runs as remote (else it is counted as local). A job retried
  // after a farm failure runs here.
  bool StartsRemote(const Edge* edge, const EdgeExec& exec) const;
  // A job that held a pool slot ended: gives the slot back, learns the residual or notes the fallback. Returns
  // whether it ran on the farm.
  bool SettleRemoteJob(JobId id, const JobExit& exit, bool retry);
  // A remote job's launcher reported a farm failure (not a compile error): whether to run it again here.
  bool RetriesLocally(const Edge* edge, const std::string& engine, const JobExit& exit);
  uint64_t Residual(const std::string& engine) const;
  struct RemoteJob {
    std::string engine;
    std::string output;
  };
  // A remote job was seen running here: the farm is suspect, a timeline marker; the first time, a warning.
  void NoteFallback(const RemoteJob& job, const std::string& why);
  void Mark(const char* kind, const RemoteJob& job, const std::string& detail);

  JobController* inner_;
  JobSizes sizes_;
  Status* status_;
  RemoteConfig config_;
  RemoteJobs remote_;
  std::unordered_map<const Edge*, EdgeExec> classes_;
  std::set<std::string> engines_{std::string()};
  std::map<JobId, bool> local_jobs_;              // running jobs counted as local (true: a remote one that fell back)
  std::map<JobId, RemoteJob> remote_jobs_;         // running remote jobs
  std::map<std::string, uint64_t> residuals_;     // per engine: the largest peak of a job completed remote
  std::unordered_map<const Edge*, std::string> retry_here_;  // edges requeued after a farm failure: their engine
  size_t local_running_ = 0;
  // Ready edges refused in the current walk (by the pool, the local cap or memory). Past the window the walk
  // stops looking, as MemoryController's does, so no class is kept for edges far down the ready queue.
  int pass_refusals_ = 0;  // up to kAdmissionWalkWindow
  bool saw_remote_eligible_ = false;
  bool farm_suspect_ = false;
  bool warned_fallback_ = false;
  const Edge* finishing_edge_ = nullptr;  // the edge whose JobFinished is passing to the inner controller
  bool finishing_ran_remote_ = false;
  std::string finishing_mode_;
  BuildTimeline* timeline_ = nullptr;
  const Clock* clock_ = nullptr;
};

}  // namespace headroom
