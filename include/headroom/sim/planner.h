// The what-if planner behind `-t plan`: each job's figures from history, the build log and priors, then the
// build replayed through the simulator (the builder's own estimator and admission code) at the requested
// -j and budget and over a sweep of other -j values and machine shapes. No graph types: testable with fakes.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "headroom/estimator/estimator.h"
#include "headroom/history/history_store.h"
#include "headroom/history/user_store.h"
#include "headroom/sim/simulator.h"

namespace headroom::sim {

// One job of the build to plan, as the builder would describe it to the estimator.
struct PlanJob {
  std::string output;
  std::string command;
  std::string rule;
  std::string rspfile_content;
  uint64_t command_hash = 0;  // BuildLog::HashCommand of the command, the history's key
  std::optional<std::string> mem_hint;
  std::vector<size_t> deps;   // indices of jobs this one needs (earlier or later in the list)
  // Its last run in .ninja_log (same command): ms since that build started, and which build it was (entries
  // of one build share a session number; see the tool). Gives a duration when the history has none, and the
  // jobs it ran beside, so durations measured under CPU contention can be turned into uncontended ones.
  struct Logged {
    int64_t start_ms = 0;
    int64_t end_ms = 0;
    int session = 0;
  };
  std::optional<Logged> logged;
};

// Where a job's figures came from, best first.
enum class FigureSource {
  kMeasured,   // this edge's own completed runs (build dir history or the per-user store)
  kEstimated,  // the estimator from other jobs' runs (class, family) or the edge's headroom_mem hint
  kPrior,      // read from the command alone: nothing of its kind was ever measured
};
const char* FigureSourceName(FigureSource source);

struct JobFigures {
  uint64_t peak_bytes = 0;
  int64_t duration_ms = 0;      // as measured (or estimated), before any contention correction
  int64_t solo_duration_ms = 0; // with the CPUs to itself: what the simulator runs it for
  FigureSource peak_source = FigureSource::kPrior;
  bool duration_known = false;  // measured in history or .ninja_log; false: the mean of known ones
  double cpu_demand = 1.0;
  // The share of its run it climbs to its peak over, from the latest completed run's rise curve; -1 when the run
  // has none (before history format v2, or a job at its peak from its first sample): PlanRequest::peak_at then.
  double peak_at = -1;
};

// The history a simulated build starts from. Each simulated build learns as a real one does, so each gets a
// fresh copy: `Make` reloads it (the tool reads the files again; tests fill an in-memory store).
struct PlanEstimator {
  std::unique_ptr<HistoryStore> history;
  std::unique_ptr<UserStore> store;  // may be null
  std::unique_ptr<Estimator> estimator;
};
using EstimatorFactory = std::function<PlanEstimator()>;

// A machine and how the build is run on it.
struct PlanShape {
  std::string name;       // "this machine", "CI 4 cores / 16 GiB"
  double cores = 1;       // CPUs the jobs share
  uint64_t budget = 0;    // the memory budget (--mem-budget, or what the machine has)
  int jobs = 1;           // -j
  double other_load = 0;  // runnable tasks from outside the build sharing the CPUs (SimConfig::cpu_other_demand)
};

struct ShapeOutcome {
  PlanShape shape;
  bool completed = false;     // every job finished (none gave up)
  int64_t wall_ms = 0;
  uint64_t peak_bytes = 0;    // the jobs' memory together, at its highest
  int oom_kills = 0;          // simulated kernel kills (truth above what admission expected)
  int requeues = 0;
  std::vector<size_t> failed; // jobs that gave up
};

// A machine shape whose -j values are swept; the best is the fastest that completes (fewest -j on a tie).
struct SweptShape {
  PlanShape machine;                 // its `jobs` is the best -j found
  std::vector<ShapeOutcome> runs;    // one per -j tried
  std::optional<size_t> best;        // index into runs
};

struct PlanRequest {
  PlanShape requested;                 // what `-t plan -j N --mem-budget=SIZE` asked about
  double measured_on_cores = 0;        // CPUs of the machine the history was measured on (0: no correction)
  double measured_other_load = 0;      // outside load it was measured under (taken to be requested.other_load)
  bool guarded = false;                // the build guard would be armed (AdmissionConfig::guarded)
  uint64_t reserve_bytes = 0;          // --mem-reserve; 0 = the default
  std::vector<PlanShape> other_machines;  // CI shapes etc.; each one's -j is swept
  std::vector<int> jobs_to_try;        // -j values swept on every machine (the requested one is added)
  int64_t tick_ms = 0;                 // 0: chosen from the jobs' durations
  // For a job whose run has no rise curve in the history: the simulator has it climb to its peak over this share
  // of its run and hold it until exit (see docs/planner.md). Jobs with a curve climb as it says.
  double peak_at = kDefaultPeakAt;
  std::FILE* trace = nullptr;          // when set: the requested shape's simulated build, one line per event
  static constexpr double kDefaultPeakAt = 0.75;
};

struct PlanReport {
  std::vector<JobFigures> figures;     // one per job
  size_t measured = 0, estimated = 0, priors = 0;  // jobs by peak source
  size_t durations_known = 0;
  int64_t default_duration_ms = 0;     // what jobs without a known duration were given
  int64_t tick_ms = 0;
  ShapeOutcome requested;
  std::vector<size_t> cannot_fit;      // jobs whose peak exceeds the requested budget: they can never run
  SweptShape this_machine;             // the requested cores and budget, -j swept
  std::vector<SweptShape> others;
};

// Sets each logged job's `session`: which build of .ninja_log it ran in. Log times are ms since that build started,
// and an output's mtime (`mtimes_ms[i]`, 0 when unknown) was set while its job ran (a shell redirect creates it at
// the start, a compiler writes it at the end), so that build started between mtime - end and mtime - start; jobs
// whose windows overlap (a second of slack) ran in one build. Jobs without an mtime get a session of their own.
void AssignLoggedBuilds(const std::vector<int64_t>& mtimes_ms, std::vector<PlanJob>* jobs);

// Each job's figures: its own measured runs first, then the estimator, then priors; durations from the history,
// else .ninja_log, else the mean of the known ones (1 s when none is known).
std::vector<JobFigures> ResolveFigures(const std::vector<PlanJob>& jobs, const PlanEstimator& source,
                                       double measured_on_cores, double measured_other_load = 0);

// The simulator's jobs from the plan's jobs and their figures.
std::vector<SimJob> ToSimJobs(const std::vector<PlanJob>& jobs, const std::vector<JobFigures>& figures,
                              double peak_at = PlanRequest::kDefaultPeakAt);

// Replays the build at one shape.
ShapeOutcome SimulateShape(const std::vector<SimJob>& jobs, const PlanShape& shape, const PlanRequest& request,
                           int64_t tick_ms, const EstimatorFactory& make, std::FILE* trace = nullptr);

// The whole plan: figures, the requested shape, and the sweeps.
PlanReport PlanBuild(const std::vector<PlanJob>& jobs, const PlanRequest& request, const EstimatorFactory& make);

// The -j values swept by default: 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64 up to max(2 x cores + 2, -j asked).
std::vector<int> DefaultJobCounts(double cores, int requested_jobs);

// Common CI runners: 2 cores / 7 GiB, 4 / 16 GiB, 8 / 32 GiB, 16 / 64 GiB (GitHub-hosted Linux sizes).
std::vector<PlanShape> CommonCiShapes();

}  // namespace headroom::sim
