// The what-if planner (sim/planner.h) over in-memory histories: where each job's figures come from, the CPU
// contention correction, jobs that can never fit, the -j sweep and its recommendation; and the simulator's CPU
// sharing it relies on.
#include <gtest/gtest.h>

#include "headroom/sim/planner.h"
#include "headroom/sim/simulator.h"

namespace headroom::sim {
namespace {

PlanJob Job(std::string output, std::vector<size_t> deps = {}) {
  PlanJob job;
  job.command = "gen --make " + output;
  job.output = std::move(output);
  job.rule = "gen";
  job.command_hash = Fnv1a(job.command);
  job.deps = std::move(deps);
  return job;
}

// A history in memory: each run is learned as a finished build would record it.
struct FakeHistory {
  struct Run {
    PlanJob job;
    uint64_t peak;
    int64_t duration_ms;
    JobOutcome outcome = JobOutcome::kCompleted;
    RiseCurve rise{};
  };
  std::vector<Run> runs;

  PlanEstimator Make() const {
    PlanEstimator out;
    out.history = std::make_unique<HistoryStore>();
    out.estimator = std::make_unique<Estimator>(out.history.get(), FileSizeFn{});
    for (const Run& run : runs) {
      JobDescription d;
      d.output = run.job.output;
      d.command = run.job.command;
      d.rule = run.job.rule;
      d.command_hash = run.job.command_hash;
      std::string error;
      EXPECT_TRUE(
          out.estimator->Learn(d, {run.peak, run.duration_ms, PeakMethod::kCgroup, run.outcome, run.rise}, &error))
          << error;
    }
    return out;
  }
  EstimatorFactory Factory() const {
    return [this] { return Make(); };
  }
};

PlanRequest Request(int jobs, uint64_t budget, double cores) {
  PlanRequest request;
  request.requested = {"here", cores, budget, jobs};
  request.tick_ms = 10;
  return request;
}

// A job of a tool never measured: nothing but the command to go on.
PlanJob UnknownToolJob(std::string output) {
  PlanJob job = Job(output);
  job.command = "othertool " + output;
  job.rule = "other";
  job.command_hash = Fnv1a(job.command);
  return job;
}

TEST(SimPlannerTest, FiguresComeFromTheEdgesLastCompletedRunThenEstimatesThenPriors) {
  FakeHistory history;
  PlanJob measured = Job("measured.o");
  history.runs.push_back({measured, 300 * kMiB, 4000});
  history.runs.push_back({measured, 500 * kMiB, 6000});
  history.runs.push_back({measured, 900 * kMiB, 1000, JobOutcome::kOomKilled});  // killed: not a figure
  PlanJob sibling = Job("sibling.o");  // same tool and flags: its class was measured
  PlanJob unknown = UnknownToolJob("unknown.o");
  PlanJob logged = UnknownToolJob("logged.o");
  logged.logged = PlanJob::Logged{0, 2000, 0};

  std::vector<JobFigures> figures = ResolveFigures({measured, sibling, unknown, logged}, history.Make(), 0);

  EXPECT_EQ(figures[0].peak_source, FigureSource::kMeasured);
  EXPECT_EQ(figures[0].peak_bytes, 500 * kMiB);
  EXPECT_EQ(figures[0].duration_ms, 6000);
  EXPECT_TRUE(figures[0].duration_known);
  EXPECT_EQ(figures[1].peak_source, FigureSource::kEstimated);
  EXPECT_GE(figures[1].peak_bytes, 500 * kMiB) << "a class estimate covers its worst member";
  EXPECT_EQ(figures[2].peak_source, FigureSource::kPrior);
  EXPECT_FALSE(figures[2].duration_known);
  EXPECT_TRUE(figures[3].duration_known) << ".ninja_log gives a duration the history lacks";
  EXPECT_EQ(figures[3].duration_ms, 2000);
  const int64_t mean_known = (figures[0].duration_ms + figures[1].duration_ms + figures[3].duration_ms) / 3;
  EXPECT_EQ(figures[2].duration_ms, mean_known) << "an unknown duration is the mean of the known ones";
}

TEST(SimPlannerTest, AJobClimbsAsItsRecordedRiseCurveSaysAndOthersOverPeakAt) {
  FakeHistory history;
  PlanJob early = Job("early.o"), late = Job("late.o"), flat = Job("flat.o");
  RiseCurve early_rise, late_rise;
  early_rise.below = {10, 20, 30, 46};  // last below 90 % at 18 % of its run: peaks at 20 %
  late_rise.below = {100, 150, 190, 207};  // last below 90 % at 81 %: peaks at 90 %
  history.runs.push_back({early, 100 * kMiB, 1000, JobOutcome::kCompleted, early_rise});
  history.runs.push_back({late, 100 * kMiB, 1000, JobOutcome::kCompleted, late_rise});
  history.runs.push_back({flat, 100 * kMiB, 1000});  // no curve (written before format v2)
  const std::vector<PlanJob> jobs = {early, late, flat};
  const std::vector<JobFigures> figures = ResolveFigures(jobs, history.Make(), 0);
  EXPECT_NEAR(figures[0].peak_at, 46.0 / 255 / 0.9, 1e-9);
  EXPECT_NEAR(figures[1].peak_at, 207.0 / 255 / 0.9, 1e-9);
  EXPECT_EQ(figures[2].peak_at, -1);
  const std::vector<SimJob> sim_jobs = ToSimJobs(jobs, figures, /*peak_at=*/0.5);
  EXPECT_NEAR(sim_jobs[0].ramp_end, 0.2, 0.001);
  EXPECT_NEAR(sim_jobs[1].ramp_end, 0.902, 0.001);
  EXPECT_EQ(sim_jobs[2].ramp_end, 0.5) << "no curve: --peak-at";
}

TEST(SimPlannerTest, DurationsMeasuredSideBySideOnTooFewCoresAreCorrectedToUncontendedOnes) {
  FakeHistory history;
  std::vector<PlanJob> jobs = {Job("a.o"), Job("b.o"), Job("c.o")};
  // a and b ran together on one core for their whole 2 s; c ran alone in another build.
  jobs[0].logged = PlanJob::Logged{0, 2000, 0};
  jobs[1].logged = PlanJob::Logged{0, 2000, 0};
  jobs[2].logged = PlanJob::Logged{0, 2000, 1};
  for (const PlanJob& job : jobs) history.runs.push_back({job, 100 * kMiB, 2000});

  std::vector<JobFigures> figures = ResolveFigures(jobs, history.Make(), /*measured_on_cores=*/1);

  EXPECT_EQ(figures[0].solo_duration_ms, 1000);
  EXPECT_EQ(figures[1].solo_duration_ms, 1000);
  EXPECT_EQ(figures[2].solo_duration_ms, 2000) << "jobs of another logged build do not contend";
}

TEST(SimPlannerTest, LogEntriesAreGroupedIntoTheBuildsTheyRanIn) {
  // Build A started at t=100000 ms: x wrote its output at its end, y (a shell redirect) at its start, z has no
  // mtime. Build B started 20 s later.
  std::vector<PlanJob> jobs = {Job("x"), Job("y"), Job("z"), Job("w")};
  jobs[0].logged = PlanJob::Logged{0, 5000, -1};
  jobs[1].logged = PlanJob::Logged{3000, 9000, -1};
  jobs[2].logged = PlanJob::Logged{0, 1000, -1};
  jobs[3].logged = PlanJob::Logged{0, 2000, -1};
  AssignLoggedBuilds({100000 + 5000, 100000 + 3000, 0, 120000 + 2000}, &jobs);
  EXPECT_EQ(jobs[0].logged->session, jobs[1].logged->session) << "mtime at the start or at the end: one build";
  EXPECT_NE(jobs[3].logged->session, jobs[0].logged->session);
  EXPECT_NE(jobs[2].logged->session, jobs[0].logged->session);
  EXPECT_NE(jobs[2].logged->session, jobs[3].logged->session);
}

TEST(SimPlannerTest, SimulatorSharesCoresBetweenRunningJobs) {
  std::vector<SimJob> jobs(2);
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].output = "j" + std::to_string(i);
    jobs[i].command = "gen " + jobs[i].output;
    jobs[i].duration_ms = 1000;
    jobs[i].peak_bytes = 10 * kMiB;
  }
  SimConfig config;
  config.cores = 2;
  config.tick_ms = 10;
  config.cpu_cores = 1;
  HistoryStore history;
  EXPECT_EQ(Simulate(jobs, config, &history).makespan_ms, 2000) << "two jobs on one CPU take twice as long";
  config.cpu_cores = 2;
  HistoryStore fresh;
  EXPECT_EQ(Simulate(jobs, config, &fresh).makespan_ms, 1000);
  config.cpu_other_demand = 2;  // two busy tasks from outside the build
  HistoryStore loaded;
  EXPECT_EQ(Simulate(jobs, config, &loaded).makespan_ms, 2000) << "four tasks share two CPUs";
}

TEST(SimPlannerTest, OutsideLoadDilutesTheBuildsOwnContention) {
  FakeHistory history;
  std::vector<PlanJob> jobs = {Job("a.o"), Job("b.o")};
  jobs[0].logged = PlanJob::Logged{0, 2000, 0};
  jobs[1].logged = PlanJob::Logged{0, 2000, 0};
  for (const PlanJob& job : jobs) history.runs.push_back({job, 100 * kMiB, 2000});
  // Two jobs and two outside tasks on two CPUs: each job had half a core.
  std::vector<JobFigures> figures = ResolveFigures(jobs, history.Make(), 2, /*measured_other_load=*/2);
  EXPECT_EQ(figures[0].solo_duration_ms, 1000);
}

TEST(SimPlannerTest, PredictsWallAndPeakOfAMeasuredBuild) {
  FakeHistory history;
  // Four 1 GiB compiles of 2 s, then a link of 1 s needing them all.
  std::vector<PlanJob> jobs = {Job("a.o"), Job("b.o"), Job("c.o"), Job("d.o")};
  jobs.push_back(Job("app", {0, 1, 2, 3}));
  for (size_t i = 0; i < 4; ++i) history.runs.push_back({jobs[i], 1 * kGiB, 2000});
  history.runs.push_back({jobs[4], 512 * kMiB, 1000});

  PlanReport report = PlanBuild(jobs, Request(2, 8 * kGiB, 2), history.Factory());

  EXPECT_EQ(report.measured, 5u);
  EXPECT_EQ(report.priors, 0u);
  ASSERT_TRUE(report.requested.completed);
  EXPECT_NEAR(static_cast<double>(report.requested.wall_ms), 5000, 100) << "two waves of two, then the link";
  EXPECT_NEAR(static_cast<double>(report.requested.peak_bytes), 2.0 * kGiB, 0.01 * kGiB);
  EXPECT_TRUE(report.cannot_fit.empty());
}

TEST(SimPlannerTest, AJobAboveTheBudgetIsListedAndTheBuildFails) {
  FakeHistory history;
  std::vector<PlanJob> jobs = {Job("small.o"), Job("huge.o")};
  history.runs.push_back({jobs[0], 200 * kMiB, 1000});
  history.runs.push_back({jobs[1], 6 * kGiB, 1000});

  PlanReport report = PlanBuild(jobs, Request(2, 4 * kGiB, 2), history.Factory());

  ASSERT_EQ(report.cannot_fit.size(), 1u);
  EXPECT_EQ(report.cannot_fit[0], 1u);
  EXPECT_FALSE(report.requested.completed);
  ASSERT_FALSE(report.requested.failed.empty());
  EXPECT_EQ(report.requested.failed[0], 1u);
  EXPECT_FALSE(report.this_machine.best) << "no -j can finish it";
  // A CI machine with more memory can.
  PlanRequest bigger = Request(2, 4 * kGiB, 2);
  bigger.other_machines = {{"8 GiB", 2, 8 * kGiB, 0}};
  bigger.jobs_to_try = {1, 2};
  report = PlanBuild(jobs, bigger, history.Factory());
  ASSERT_EQ(report.others.size(), 1u);
  ASSERT_TRUE(report.others[0].best);
  EXPECT_TRUE(report.others[0].runs[*report.others[0].best].completed);
}

TEST(SimPlannerTest, RecommendsTheFewestJobsThatFinishFastest) {
  FakeHistory history;
  std::vector<PlanJob> jobs;
  for (int i = 0; i < 8; ++i) {
    jobs.push_back(Job("j" + std::to_string(i) + ".o"));
    history.runs.push_back({jobs.back(), 100 * kMiB, 1000});
  }
  PlanRequest request = Request(1, 16 * kGiB, 4);
  request.jobs_to_try = {1, 2, 4, 8};

  PlanReport report = PlanBuild(jobs, request, history.Factory());

  ASSERT_TRUE(report.this_machine.best);
  EXPECT_EQ(report.this_machine.runs.size(), 4u);
  EXPECT_EQ(report.this_machine.machine.jobs, 4) << "-j8 on 4 CPUs is no faster than -j4";
  EXPECT_NEAR(static_cast<double>(report.this_machine.runs[*report.this_machine.best].wall_ms), 2000, 50);
  EXPECT_NEAR(static_cast<double>(report.requested.wall_ms), 8000, 100);
}

TEST(SimPlannerTest, MemoryNotCoresLimitsABuildOfHeavyJobs) {
  FakeHistory history;
  std::vector<PlanJob> jobs;
  for (int i = 0; i < 4; ++i) {
    jobs.push_back(Job("k" + std::to_string(i) + ".o"));
    history.runs.push_back({jobs.back(), 3 * kGiB, 10'000});
  }
  PlanRequest request = Request(4, 8 * kGiB, 4);
  PlanReport report = PlanBuild(jobs, request, history.Factory());
  ASSERT_TRUE(report.requested.completed);
  EXPECT_LE(report.requested.peak_bytes, 8 * kGiB);
  EXPECT_GE(report.requested.wall_ms, 20'000) << "at most two 3 GiB jobs fit 8 GiB at once";
  EXPECT_EQ(report.requested.oom_kills, 0);
}

TEST(SimPlannerTest, DefaultSweepAndCiShapes) {
  EXPECT_EQ(DefaultJobCounts(2, 0), (std::vector<int>{1, 2, 3, 4, 6}));
  EXPECT_EQ(DefaultJobCounts(2, 12), (std::vector<int>{1, 2, 3, 4, 6, 8, 12}));
  std::vector<PlanShape> ci = CommonCiShapes();
  ASSERT_EQ(ci.size(), 4u);
  EXPECT_EQ(ci[1].cores, 4);
  EXPECT_EQ(ci[1].budget, 16 * kGiB);
}

}  // namespace
}  // namespace headroom::sim
