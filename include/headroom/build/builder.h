// The builder: runs the plan. Starts ready edges when the CPU cap (-j, -l), their pool and the
// admission controller allow, waits for jobs, records logs and deps, restats, and cleans up on
// interrupt. Memory awareness plugs in through JobController without touching this loop.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "headroom/build/build_config.h"
#include "headroom/exec/process_runner.h"
#include "headroom/graph/graph.h"
#include "headroom/plan/plan.h"
#include "headroom/scan/scan.h"

namespace headroom {

class BuildLog;
class Clock;
class Deadline;
class ContentHashes;
class DepsLog;
class DiskInterface;
class JobserverClient;
class JobserverServer;
class Status;

// Per-job decisions beyond -j: whether a ready edge may start now, what to do when a job ends,
// and periodic work (memory sampling, the safety net). The default allows everything.
class JobController {
 public:
  virtual ~JobController() = default;
  // A new walk over the ready edges begins (MayStart follows for each, in priority order).
  virtual void BeginPass() {}
  // Asked for each ready edge in priority order; `running` counts jobs in flight.
  virtual bool MayStart(Edge* edge, size_t running) { return true; }
  // Options for starting the job (e.g. a cgroup to join).
  virtual JobStartOptions PrepareJob(Edge* edge) { return {}; }
  virtual void JobStarted(Edge* edge, JobId id, ProcessRunner* runner) {}
  // Called for every finished job before its result is used. Returning true requeues the edge
  // (its output is dropped) instead of finishing it. May append to exit->output (e.g. why a job
  // that ran out of memory finally failed).
  virtual bool JobFinished(Edge* edge, JobExit* exit) { return false; }
  // How long the builder may block waiting for jobs (-1 = until one finishes).
  virtual int TickIntervalMs() const { return -1; }
  // With nothing of this build running and ready work held back (it waits for other builds to free memory): poll
  // again after this many ms instead of stopping as stuck. -1: nothing is held back that way.
  virtual int IdleRetryMs() const { return -1; }
  // Periodic work while jobs run; may signal or kill jobs through the runner.
  virtual void Tick(ProcessRunner* runner) {}
  // headroom's jobserver (--jobserver, docs/jobserver.md): may job `id` be offered one more slot of
  // parallelism now? Asked before each offer, after -j allowed it.
  virtual bool MayGrantSlot(Edge* edge, JobId id) { return true; }
  // The slots beyond its own that job `id` holds or is being offered are now `slots`.
  virtual void SlotsChanged(Edge* edge, JobId id, size_t slots) {}
  // The build ended (successfully or not). When it stops early this comes before the jobs still
  // running are signalled and waited for, so a controller can release any it holds.
  virtual void BuildEnded() {}
};

// kStoppedAtDeadline: --deadline stopped it (docs/deadline.md); what finished is recorded, the next run resumes.
enum class BuildResult { kSucceeded, kFailed, kInterrupted, kStoppedAtDeadline };

class Builder {
 public:
  Builder(State* state, const BuildConfig& config, BuildLog* build_log, DepsLog* deps_log, DiskInterface* disk,
          Status* status, const Clock* clock, Explanations* explanations = nullptr);
  ~Builder();

  Node* AddTarget(const std::string& name, std::string* err);
  bool AddTarget(Node* target, std::string* err);
  bool AlreadyUpToDate() const { return !plan_.more_to_do(); }

  // Runs the build. On failure *err holds the "build stopped" reason.
  BuildResult Build(std::string* err);
  // Exit status for a failed build: the failing job's code (1.13 semantics), 130 when interrupted,
  // kDeadlineExitCode when stopped at the deadline.
  int failure_exit_code() const { return failure_exit_code_; }

  void set_runner(ProcessRunner* runner) { runner_ = runner; }
  void set_job_controller(JobController* controller) { controller_ = controller; }
  // make's jobserver (MAKEFLAGS): every job past the first needs one of its tokens, and -j no
  // longer caps. Not owned; tokens are handed back as jobs end and in Cleanup.
  void set_jobserver(JobserverClient* jobserver) { jobserver_ = jobserver; }
  // headroom's own jobserver for its jobs (--jobserver): each job gets a channel, and spare -j capacity
  // the controller agrees to is offered to them as extra slots. Not owned.
  void set_jobserver_server(JobserverServer* server) { server_ = server; }
  // The file stamped at each command start (log v6+); empty disables it.
  void set_lock_file_path(std::string path) { lock_file_path_ = std::move(path); }
  // --content-hash: the scan may call an mtime-dirty edge clean by content, and each success is recorded. Not owned.
  void set_content_hashes(ContentHashes* hashes) {
    content_hashes_ = hashes;
    scan_.set_content_hashes(hashes);
  }
  // Priority: weight of each edge on the critical path (default: ninja's 1 per command edge).
  void set_edge_cost(std::function<EdgeWeight(const Edge*)> cost) { edge_cost_ = std::move(cost); }

  // --deadline: jobs start only when predicted to end before it, and the build stops there. Not owned.
  void set_deadline(Deadline* deadline) { deadline_ = deadline; }

  Plan& plan() { return plan_; }
  DependencyScan& scan() { return scan_; }

 private:
  struct RunningEdge {
    Edge* edge;
    int64_t start_time_ms;
  };

  bool StartEdge(Edge* edge, std::string* err);
  bool FinishCommand(Edge* edge, JobExit* result, std::string* err);
  bool ExtractDeps(Edge* edge, JobExit* result, const std::string& deps_type, std::vector<Node*>* deps_nodes,
                   std::string* err);
  bool RestatOutputs(Edge* edge, TimeStamp* record_mtime, std::string* err);
  bool LoadDyndeps(Node* node, std::string* err);
  bool CanStartMore(size_t running) const;
  // Jobserver server: reads every channel back, then offers what -j and the controller allow.
  void ReconcileSlots();
  void OfferSlots(size_t running);
  size_t ExtraSlots() const;
  int WaitTimeoutMs() const;
  // The next ready edge that -j, the controller and the deadline allow (with a deadline: one whose chain to
  // the targets still fits first).
  Edge* FindReadyEdge(size_t running);
  // Whether the deadline stops the build now: past it, once no running job is predicted to end in the grace.
  bool DeadlineStopsBuild();
  // Whether every ready edge is predicted to end past the deadline.
  bool NothingReadyFitsDeadline();
  BuildResult StoppedAtDeadline(std::string* err);
  void Cleanup();
  int64_t NowMs() const;
  int64_t PreviousDurationMs(const Edge* edge) const;

  State* state_;
  const BuildConfig& config_;
  BuildLog* build_log_;
  DepsLog* deps_log_;
  DiskInterface* disk_;
  Status* status_;
  const Clock* clock_;
  ProcessRunner* runner_ = nullptr;
  JobController default_controller_;
  JobController* controller_ = &default_controller_;
  JobserverClient* jobserver_ = nullptr;
  JobserverServer* server_ = nullptr;
  bool channel_warning_shown_ = false;
  Plan plan_;
  DependencyScan scan_;
  std::string lock_file_path_;
  ContentHashes* content_hashes_ = nullptr;
  std::function<EdgeWeight(const Edge*)> edge_cost_;
  int64_t build_start_ms_ = 0;
  std::map<JobId, RunningEdge> running_;
  std::vector<JobId> dry_run_finished_;
  JobId next_dry_run_id_ = -1;  // dry-run jobs get negative ids
  int failure_exit_code_ = 1;
  Deadline* deadline_ = nullptr;
  int edges_done_ = 0;   // command edges finished successfully in this Build
  int failed_jobs_ = 0;  // and those that failed (-k)
};

}  // namespace headroom
