// Discrete-event build simulator: jobs with memory curves on a fake clock, driven by the real estimator and the
// build's own scheduler core (admission walks, early starts and parking, safety net, requeues: scheduler_core.h),
// or by a fixed -j baseline, with a "kernel" that OOM-kills the biggest job whenever the budget is exceeded. The
// unit tests and `-t plan` (planner.h) both run it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "headroom/admission/admission_policy.h"
#include "headroom/admission/priority.h"
#include "headroom/admission/safety_net.h"
#include "headroom/admission/scheduler_core.h"
#include "headroom/estimator/estimator.h"
#include "headroom/history/history_store.h"

namespace headroom::sim {

struct SimJob {
  std::string output;
  std::string command;
  std::string rule = "CXX";
  std::string rspfile_content;  // link inputs behind @file, for the linker prior.
  uint64_t command_hash = 0;    // the build log's hash of the command; 0 = FNV-1a of `command`.
  int64_t duration_ms = 1000;   // the truth when run with the CPU to itself (see SimConfig::cpu_cores).
  uint64_t peak_bytes = 0;      // the truth, unknown to the policy.
  double ramp_end = 0.2;        // share of the run spent climbing to the peak (nvcc peaks early).
  double release_start = 0.8;   // share of the run after which memory falls back.
  double cpu_demand = 1.0;      // cores it keeps busy when alone; only read when SimConfig::cpu_cores > 0.
  std::vector<size_t> deps;
  std::optional<std::string> mem_hint;

  // Memory held after `progress_ms` of work: a ramp to the peak, a plateau, a release.
  uint64_t MemoryAt(int64_t progress_ms) const;
};

struct SimConfig {
  uint64_t budget = 32 * kGiB;
  int cores = 16;   // job slots: the build's -j.
  int fixed_j = 0;  // > 0: the ninja baseline, -j fixed_j with no memory control at all.
  int64_t tick_ms = 250;
  int64_t time_limit_ms = 24 * 3600 * 1000LL;
  // > 0: the machine's CPUs. Running jobs share them: when their summed cpu_demand exceeds this, each one
  // progresses at cpu_cores / demand of real time. 0: every job runs at full speed whatever runs beside it.
  double cpu_cores = 0;
  // Runnable tasks from outside the build (other builds on a shared machine) competing for those CPUs, each
  // wanting a core: with them the jobs get cpu_cores / (demand + cpu_other_demand).
  double cpu_other_demand = 0;
  PriorityMode priority = PriorityMode::kDurationAndMemory;
  // Order ready jobs as the builder does (MemoryController::EdgeCost, BuilderEdgeWeight): critical path in ms
  // of predicted duration grown by memory share, each job at least a second, jobs too big to run together
  // chained, once any history exists; ninja's edge count before. Overrides `priority`.
  bool builder_priorities = false;
  // > 0: an admission walk looks at only this many ready jobs, best first (the builder's walk stops after
  // kAdmissionWalkWindow refusals either way). 0: all of them.
  size_t candidate_window = 0;
  AdmissionConfig admission;
  SafetyConfig safety;
  RequeueConfig requeue;
  EstimatorConfig estimator;
  std::FILE* trace = nullptr;  // when set: one line per start, finish, kill and change of the head's wait reason.
};

struct SimResult {
  bool completed = false;
  int64_t makespan_ms = 0;
  uint64_t peak_used = 0;
  int oom_kills = 0;          // by the simulated kernel.
  int safety_kills = 0;       // by the safety net.
  int freezes = 0;
  int requeues = 0;
  int over_budget_admissions = 0;
  MemoryDecisions decisions;  // the scheduler core's record, as a build's summary reads it
  std::vector<std::string> failures;    // give-up messages.
  std::vector<size_t> failed_jobs;      // the jobs that gave up, in order.
  std::map<size_t, int64_t> started_ms; // last start of each job.
  std::map<size_t, int64_t> finished_ms;
  std::map<size_t, int> max_concurrency_while_running;  // most jobs running at once during each job's last run.
};

uint64_t Fnv1a(std::string_view text);

class Simulator {
 public:
  // Estimates come from a private estimator over `history`, which the build's finished and killed jobs
  // teach as it goes (so two runs over one history are a first and a second build).
  Simulator(const std::vector<SimJob>& jobs, const SimConfig& config, HistoryStore* history);
  // Estimates come from `estimator` (borrowed; it learns as the build goes, as the builder's does).
  Simulator(const std::vector<SimJob>& jobs, const SimConfig& config, Estimator* estimator);
  ~Simulator();

  SimResult Run();

 private:
  struct JobState;
  struct Active;

  static AdmissionConfig WithBudget(const SimConfig& config);
  JobDescription Describe(size_t i) const;
  // The job's estimate, kept by the core and re-predicted once the estimator learned something.
  const EstimateFigures& EstimateOf(size_t i);
  void ComputePriorities_();
  void UseBuilderWeights(bool any_history, std::vector<PriorityJob>* costs) const;
  void MakeReady(size_t i);
  uint64_t Used() const;
  MemoryReading Reading() const;
  std::vector<size_t> ReadyByPriority() const;
  void Admit();
  // One admission walk, as the builder makes one per start: the first ready job the core admits, if any.
  std::optional<size_t> Walk(const std::vector<size_t>& ready, const MemoryReading& reading);
  void Start(size_t i);
  double ProgressRate() const;
  void Advance();
  void KernelOomKills();
  void Fail(size_t index, bool by_kernel);
  void FinishJobs();
  void ApplySafetyNet();
  void Trace(const char* what, size_t job, const std::string& detail) const;

  const std::vector<SimJob>& jobs_;
  SimConfig config_;
  std::string last_head_reason_;
  std::unique_ptr<Estimator> own_estimator_;
  Estimator* estimator_;
  SchedulerCore core_;
  std::vector<JobState> state_;
  std::map<size_t, std::vector<size_t>> dependents_;
  std::vector<double> priority_;
  std::set<std::pair<double, size_t>> ready_;  // (-priority, job): best first, then manifest order
  std::vector<Active> running_;
  CoreRunKey next_run_ = 1;
  SimResult result_;
  int64_t now_ = 0;
  size_t finished_ = 0, failed_ = 0;
};

SimResult Simulate(const std::vector<SimJob>& jobs, const SimConfig& config, HistoryStore* history);

}  // namespace headroom::sim
