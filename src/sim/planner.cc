// The what-if planner: job figures (history, .ninja_log, priors, CPU-contention correction), one simulated
// build per shape, and the -j sweeps behind the recommendation.
#include "headroom/sim/planner.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "headroom/admission/admission_policy.h"
#include "headroom/util/byte_size.h"

namespace headroom::sim {
namespace {

// A job holds its peak from where it reached it (its rise curve, else PlanRequest::peak_at of its run) until it
// exits (memhog, and compilers that free at exit).
constexpr double kReleaseStart = 1.0;
constexpr int64_t kUnknownDurationMs = 1000;
// A -j whose wall is within this share of the fastest is as good: the fewest such -j is recommended.
constexpr double kSameWallShare = 0.02;
// Ready jobs an admission pass looks at (SimConfig::candidate_window), the builder's walk window: with thousands
// ready, every pass used to build a candidate for each (a 2,000-job plan took 13 s of CPU; 3.9 s with the window).
constexpr size_t kCandidateWindow = kAdmissionWalkWindow;

JobDescription DescribeJob(const PlanJob& job) {
  JobDescription d;
  d.output = job.output;
  d.command = job.command;
  d.rule = job.rule;
  d.rspfile_content = job.rspfile_content;
  d.command_hash = job.command_hash;
  if (job.mem_hint) d.mem_hint = *job.mem_hint;
  return d;
}

// Where a run with this rise curve reached its peak, as a share of its run, for the simulator's linear climb: the
// share at which it was last seen below 90 % of it, stretched to the whole peak (a straight line through that point).
// -1 without a curve.
double PeakAtOf(const RiseCurve& rise) {
  if (!rise.known()) return -1;
  const double below_90 = static_cast<double>(rise.below.back()) / RiseCurve::kScale;
  return std::clamp(below_90 / RiseCurve::kLevels.back(), 0.01, 1.0);
}

// The edge's latest completed run: from the build dir's history, else the per-user store (as the estimator
// looks them up).
const HistoryRecord* LastCompletedRun(const PlanJob& job, const JobProfile& profile, const PlanEstimator& source) {
  const EdgeHistory* edge = source.history ? source.history->FindEdge(job.output, job.command_hash) : nullptr;
  if ((!edge || edge->recent.empty()) && source.store && profile.store_key != 0) {
    edge = source.store->FindEdge(profile.store_key);
  }
  if (!edge) return nullptr;
  for (size_t k = edge->recent.size(); k-- > 0;) {
    if (!edge->recent[k].killed()) return &edge->recent[k];
  }
  return nullptr;
}

JobFigures FiguresOf(const PlanJob& job, const PlanEstimator& source) {
  JobFigures figures;
  const JobDescription description = DescribeJob(job);
  const JobProfile profile = source.estimator->Profile(description);
  if (const HistoryRecord* run = LastCompletedRun(job, profile, source)) {
    figures.peak_bytes = run->peak_bytes;
    figures.duration_ms = run->duration_ms;
    figures.duration_known = run->duration_ms > 0;
    figures.peak_source = FigureSource::kMeasured;
    figures.peak_at = PeakAtOf(run->rise);
  } else {
    const Estimate estimate = source.estimator->Predict(description, profile);
    figures.peak_bytes = estimate.peak_bytes;
    figures.duration_ms = estimate.duration_ms;
    figures.duration_known = estimate.duration_ms > 0;
    figures.peak_source = estimate.source == EstimateSource::kPrior ? FigureSource::kPrior : FigureSource::kEstimated;
  }
  if (!figures.duration_known && job.logged && job.logged->end_ms > job.logged->start_ms) {
    figures.duration_ms = job.logged->end_ms - job.logged->start_ms;
    figures.duration_known = true;
  }
  return figures;
}

// Durations were measured beside other jobs: with more CPU demand than `cores`, each job got cores/demand of
// real time (the model the simulator runs). Its uncontended duration is the integral of that share over its
// logged run, scaled to the measured duration. Only jobs of one logged build are compared with each other.
void RemoveContention(const std::vector<PlanJob>& jobs, double cores, double other_load,
                      std::vector<JobFigures>* figures) {
  std::map<int, std::vector<size_t>> sessions;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].logged && jobs[i].logged->end_ms > jobs[i].logged->start_ms) sessions[jobs[i].logged->session].push_back(i);
  }
  for (const auto& [session, members] : sessions) {
    // Demand changes only where a run starts or ends: integrate the share between those points once.
    std::map<int64_t, double> demand_change;
    for (size_t i : members) {
      demand_change[jobs[i].logged->start_ms] += (*figures)[i].cpu_demand;
      demand_change[jobs[i].logged->end_ms] -= (*figures)[i].cpu_demand;
    }
    std::map<int64_t, double> share_integral;  // time -> integral of the share from the first point
    double demand = 0, integral = 0;
    int64_t previous = demand_change.begin()->first;
    for (const auto& [time, change] : demand_change) {
      const double wanted = demand + other_load;
      integral += static_cast<double>(time - previous) * (wanted > cores ? cores / wanted : 1.0);
      share_integral[time] = integral;
      demand += change;
      previous = time;
    }
    for (size_t i : members) {
      JobFigures& f = (*figures)[i];
      const PlanJob::Logged& run = *jobs[i].logged;
      const double solo_share = (share_integral[run.end_ms] - share_integral[run.start_ms]) /
                                static_cast<double>(run.end_ms - run.start_ms);
      f.solo_duration_ms = std::max<int64_t>(1, std::llround(static_cast<double>(f.duration_ms) * solo_share));
    }
  }
}

int64_t ChooseTick(const std::vector<SimJob>& jobs) {
  if (jobs.empty()) return 250;
  std::vector<int64_t> durations;
  for (const SimJob& job : jobs) durations.push_back(job.duration_ms);
  std::nth_element(durations.begin(), durations.begin() + static_cast<long>(durations.size() / 2), durations.end());
  // Finishes are seen at tick boundaries: a tick of 1/40 of the typical job keeps that error near 1%.
  return std::clamp<int64_t>(durations[durations.size() / 2] / 40, 10, 250);
}

SweptShape Sweep(const std::vector<SimJob>& jobs, PlanShape machine, const std::vector<int>& job_counts,
                 const PlanRequest& request, int64_t tick_ms, const EstimatorFactory& make) {
  SweptShape swept;
  for (int j : job_counts) {
    PlanShape shape = machine;
    shape.jobs = j;
    swept.runs.push_back(SimulateShape(jobs, shape, request, tick_ms, make));
  }
  int64_t fastest = -1;
  for (const ShapeOutcome& run : swept.runs) {
    if (run.completed && (fastest < 0 || run.wall_ms < fastest)) fastest = run.wall_ms;
  }
  for (size_t k = 0; k < swept.runs.size(); ++k) {
    const ShapeOutcome& run = swept.runs[k];
    if (!run.completed || static_cast<double>(run.wall_ms) > static_cast<double>(fastest) * (1.0 + kSameWallShare)) {
      continue;
    }
    if (!swept.best || run.shape.jobs < swept.runs[*swept.best].shape.jobs) swept.best = k;
  }
  swept.machine = machine;
  if (swept.best) swept.machine.jobs = swept.runs[*swept.best].shape.jobs;
  return swept;
}

std::vector<int> WithRequested(std::vector<int> counts, int requested) {
  if (requested > 0) counts.push_back(requested);
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

}  // namespace

const char* FigureSourceName(FigureSource source) {
  switch (source) {
    case FigureSource::kMeasured:
      return "measured";
    case FigureSource::kEstimated:
      return "estimated";
    case FigureSource::kPrior:
      break;
  }
  return "prior";
}

void AssignLoggedBuilds(const std::vector<int64_t>& mtimes_ms, std::vector<PlanJob>* jobs) {
  constexpr int64_t kSlackMs = 1000;
  struct Window {
    int64_t earliest, latest;
    size_t job;
  };
  std::vector<Window> windows;
  for (size_t i = 0; i < jobs->size(); ++i) {
    const std::optional<PlanJob::Logged>& run = (*jobs)[i].logged;
    if (run && mtimes_ms[i] > 0) {
      windows.push_back({mtimes_ms[i] - run->end_ms - kSlackMs, mtimes_ms[i] - run->start_ms + kSlackMs, i});
    }
  }
  std::sort(windows.begin(), windows.end(), [](const Window& a, const Window& b) { return a.earliest < b.earliest; });
  int session = 0;
  int64_t session_latest = 0;
  for (size_t k = 0; k < windows.size(); ++k) {
    if (k > 0 && windows[k].earliest > session_latest) {
      ++session;
      session_latest = windows[k].latest;
    } else {
      session_latest = k == 0 ? windows[k].latest : std::max(session_latest, windows[k].latest);
    }
    (*jobs)[windows[k].job].logged->session = session;
  }
  for (size_t i = 0; i < jobs->size(); ++i) {
    if ((*jobs)[i].logged && mtimes_ms[i] <= 0) (*jobs)[i].logged->session = ++session;
  }
}

std::vector<JobFigures> ResolveFigures(const std::vector<PlanJob>& jobs, const PlanEstimator& source,
                                       double measured_on_cores, double measured_other_load) {
  std::vector<JobFigures> figures;
  figures.reserve(jobs.size());
  for (const PlanJob& job : jobs) figures.push_back(FiguresOf(job, source));
  int64_t total = 0, known = 0;
  for (const JobFigures& f : figures) {
    if (f.duration_known) {
      total += f.duration_ms;
      ++known;
    }
  }
  const int64_t fallback = known > 0 ? std::max<int64_t>(1, total / known) : kUnknownDurationMs;
  for (JobFigures& f : figures) {
    if (!f.duration_known) f.duration_ms = fallback;
    f.solo_duration_ms = std::max<int64_t>(1, f.duration_ms);
  }
  if (measured_on_cores > 0) RemoveContention(jobs, measured_on_cores, measured_other_load, &figures);
  return figures;
}

std::vector<SimJob> ToSimJobs(const std::vector<PlanJob>& jobs, const std::vector<JobFigures>& figures,
                              double peak_at) {
  std::vector<SimJob> out;
  out.reserve(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    SimJob job;
    job.output = jobs[i].output;
    job.command = jobs[i].command;
    job.rule = jobs[i].rule;
    job.rspfile_content = jobs[i].rspfile_content;
    job.command_hash = jobs[i].command_hash;
    job.mem_hint = jobs[i].mem_hint;
    job.deps = jobs[i].deps;
    job.duration_ms = figures[i].solo_duration_ms;
    job.peak_bytes = figures[i].peak_bytes;
    job.ramp_end = std::clamp(figures[i].peak_at >= 0 ? figures[i].peak_at : peak_at, 0.01, 1.0);
    job.release_start = kReleaseStart;
    job.cpu_demand = figures[i].cpu_demand;
    out.push_back(std::move(job));
  }
  return out;
}

ShapeOutcome SimulateShape(const std::vector<SimJob>& jobs, const PlanShape& shape, const PlanRequest& request,
                           int64_t tick_ms, const EstimatorFactory& make, std::FILE* trace) {
  SimConfig config;
  config.budget = shape.budget;
  config.cores = std::max(1, shape.jobs);
  config.cpu_cores = shape.cores;
  config.cpu_other_demand = shape.other_load;
  config.tick_ms = tick_ms;
  config.time_limit_ms = 30LL * 24 * 3600 * 1000;
  config.builder_priorities = true;
  config.candidate_window = kCandidateWindow;
  config.admission.reserve_bytes = request.reserve_bytes;
  // Under the build guard the build bets as MemoryController does there: the same rules, early starts and parking.
  if (request.guarded) config.admission = GuardedAdmission(config.admission);
  config.trace = trace;
  PlanEstimator estimator = make();
  SimResult result = Simulator(jobs, config, estimator.estimator.get()).Run();
  ShapeOutcome outcome;
  outcome.shape = shape;
  outcome.completed = result.completed;
  outcome.wall_ms = result.makespan_ms;
  outcome.peak_bytes = result.peak_used;
  outcome.oom_kills = result.oom_kills;
  outcome.requeues = result.requeues;
  outcome.failed = result.failed_jobs;
  return outcome;
}

PlanReport PlanBuild(const std::vector<PlanJob>& jobs, const PlanRequest& request, const EstimatorFactory& make) {
  PlanReport report;
  {
    PlanEstimator source = make();
    report.figures = ResolveFigures(jobs, source, request.measured_on_cores, request.measured_other_load);
  }
  for (const JobFigures& f : report.figures) {
    report.measured += f.peak_source == FigureSource::kMeasured;
    report.estimated += f.peak_source == FigureSource::kEstimated;
    report.priors += f.peak_source == FigureSource::kPrior;
    report.durations_known += f.duration_known;
    if (!f.duration_known) report.default_duration_ms = f.duration_ms;
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (report.figures[i].peak_bytes > request.requested.budget) report.cannot_fit.push_back(i);
  }
  const std::vector<SimJob> sim_jobs = ToSimJobs(jobs, report.figures, request.peak_at);
  report.tick_ms = request.tick_ms > 0 ? request.tick_ms : ChooseTick(sim_jobs);
  report.requested = SimulateShape(sim_jobs, request.requested, request, report.tick_ms, make, request.trace);
  const std::vector<int> here = WithRequested(
      request.jobs_to_try.empty() ? DefaultJobCounts(request.requested.cores, request.requested.jobs)
                                  : request.jobs_to_try,
      request.requested.jobs);
  report.this_machine = Sweep(sim_jobs, request.requested, here, request, report.tick_ms, make);
  for (const PlanShape& machine : request.other_machines) {
    const std::vector<int> counts =
        request.jobs_to_try.empty() ? DefaultJobCounts(machine.cores, 0) : request.jobs_to_try;
    report.others.push_back(Sweep(sim_jobs, machine, counts, request, report.tick_ms, make));
  }
  return report;
}

std::vector<int> DefaultJobCounts(double cores, int requested_jobs) {
  const int limit = std::max(static_cast<int>(std::ceil(2 * cores)) + 2, requested_jobs);
  std::vector<int> counts;
  for (int j : {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64}) {
    if (j <= limit) counts.push_back(j);
  }
  return counts;
}

std::vector<PlanShape> CommonCiShapes() {
  return {{"CI 2 cores / 7 GiB", 2, 7 * kGiB, 0},
          {"CI 4 cores / 16 GiB", 4, 16 * kGiB, 0},
          {"CI 8 cores / 32 GiB", 8, 32 * kGiB, 0},
          {"CI 16 cores / 64 GiB", 16, 64 * kGiB, 0}};
}

}  // namespace headroom::sim
