// Replay: the build (Builder + MemoryController, the adapter to edges and processes) and the simulator make the
// same decisions on the same inputs, since both run the one scheduler core (scheduler_core.h). The same graph,
// estimates (memory hints), memory readings and job durations go to both; the starts (when, which) and the waits
// they decide must be equal.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "fakes.h"
#include "headroom/admission/memory_controller.h"
#include "headroom/util/byte_size.h"
#include "headroom/build/builder.h"
#include "headroom/estimator/estimator.h"
#include "headroom/history/history_store.h"
#include "headroom/logs/build_log.h"
#include "headroom/logs/deps_log.h"
#include "headroom/manifest/manifest_parser.h"
#include "headroom/memory/job_meter.h"
#include "headroom/memory/memory_probe.h"
#include "headroom/sim/simulator.h"
#include "headroom/status/status.h"
#include "memory_test_support.h"

namespace headroom {
namespace {

using fakes::ManualClock;
using fakes::VirtualFileSystem;

struct ReplayJob {
  std::string hint;  // $headroom_mem: the estimate both sides start from
  int64_t duration_ms;
  std::vector<size_t> deps;
};

// A start as either side decided it: when, and which job.
using Start = std::pair<int64_t, std::string>;

// Runs each job for its scripted duration on a manual clock: a wait moves the clock to the next job's end and
// finishes every job that ends then (what the simulator's tick does for jobs whose durations are whole ticks).
class ScriptedRunner : public fakes::FakeProcessRunner {
 public:
  ScriptedRunner(VirtualFileSystem* fs, ManualClock* clock, std::map<std::string, int64_t> durations)
      : FakeProcessRunner(fs), fs_(fs), clock_(clock), durations_(std::move(durations)) {}

  JobId Start(const std::string& command, const JobStartOptions& options, std::string* err) override {
    const JobId id = FakeProcessRunner::Start(command, options, err);
    const std::string output = command.substr(command.rfind(' ') + 1);
    starts.push_back({clock_->now_ms, output});
    running_[id] = {output, clock_->now_ms + durations_.at(output)};
    return id;
  }

  WaitResult Wait(int timeout_ms, std::vector<JobExit>* finished) override {
    if (running_.empty()) return WaitResult::kTimeout;
    int64_t next_end = INT64_MAX;
    for (const auto& [id, job] : running_) next_end = std::min(next_end, job.second);
    clock_->now_ms = next_end;
    for (auto it = running_.begin(); it != running_.end();) {
      if (it->second.second != next_end) {
        ++it;
        continue;
      }
      fs_->Create(it->second.first);
      JobExit exit;
      exit.id = it->first;
      exit.exited_normally = true;
      exit.wall_ms = durations_.at(it->second.first);
      finished->push_back(exit);
      it = running_.erase(it);
    }
    return WaitResult::kJobsFinished;
  }
  size_t running_count() const override { return running_.size(); }

  std::vector<std::pair<int64_t, std::string>> starts;

 private:
  VirtualFileSystem* fs_;
  ManualClock* clock_;
  std::map<std::string, int64_t> durations_;
  std::map<JobId, std::pair<std::string, int64_t>> running_;  // output, end
};

std::string OutputOf(size_t i) { return fmt::format("o{}", i); }

struct Decisions {
  std::vector<Start> starts;
  int jobs_waited = 0;
  int64_t wait_ms_total = 0;
  int over_budget_starts = 0;
};

// The real build: the Builder and MemoryController over a fake machine of `total` bytes whose jobs hold nothing.
Decisions RunBuild(const std::vector<ReplayJob>& jobs, uint64_t total, int parallelism) {
  memory_test::FakeRoot fake;
  fake.WriteQuietMachine(total);
  State state;
  VirtualFileSystem fs;
  ManualClock clock;
  std::map<std::string, int64_t> durations;
  std::string manifest = "rule touch\n  command = touch $out\n";
  std::string all = "build all: phony";
  for (size_t i = 0; i < jobs.size(); ++i) {
    durations[OutputOf(i)] = jobs[i].duration_ms;
    std::string inputs;
    for (size_t dep : jobs[i].deps) inputs += " " + OutputOf(dep);
    manifest += fmt::format("build {}: touch{}\n  headroom_mem = {}\n", OutputOf(i), inputs, jobs[i].hint);
    all += " " + OutputOf(i);
  }
  ManifestParser parser(&state, &fs);
  std::string err;
  EXPECT_TRUE(parser.ParseTest(manifest + all + "\n", &err)) << err;
  ScriptedRunner runner(&fs, &clock, durations);
  MemoryProbe probe(memory_test::FakeProbeOptions(fake, &clock));
  JobMeter meter(std::unique_ptr<JobCgroups>(), memory_test::FakeMeterOptions(fake, /*use_cgroups=*/false));
  HistoryStore history;
  Estimator estimator(&history, {});
  BuildLog log;
  DepsLog deps_log;
  fakes::NullStatus status;
  MemoryConfig memory;
  MemoryController controller({&probe, &meter, &estimator, &log, &status, &clock, ""}, memory, false);
  BuildConfig config;
  config.parallelism = parallelism;
  Builder builder(&state, config, &log, &deps_log, &fs, &status, &clock);
  builder.set_runner(&runner);
  builder.set_job_controller(&controller);
  builder.set_edge_cost([&controller](const Edge* edge) { return controller.EdgeCost(edge); });
  EXPECT_TRUE(builder.AddTarget("all", &err)) << err;
  EXPECT_EQ(BuildResult::kSucceeded, builder.Build(&err)) << err;
  Decisions decisions;
  decisions.starts = runner.starts;
  decisions.jobs_waited = controller.decisions().jobs_waited;
  decisions.wait_ms_total = controller.decisions().wait_ms_total;
  decisions.over_budget_starts = controller.decisions().over_budget_starts;
  return decisions;
}

// The simulator over the same jobs: a tick as long as the durations' common step, the budget the machine.
Decisions RunSimulator(const std::vector<ReplayJob>& jobs, uint64_t total, int parallelism, int64_t tick_ms) {
  std::vector<sim::SimJob> sim_jobs;
  for (size_t i = 0; i < jobs.size(); ++i) {
    sim::SimJob job;
    job.output = OutputOf(i);
    job.command = "touch " + job.output;
    job.rule = "touch";
    job.duration_ms = jobs[i].duration_ms;
    job.peak_bytes = 0;  // holds nothing, as the fake machine's jobs
    job.deps = jobs[i].deps;
    job.mem_hint = jobs[i].hint;
    sim_jobs.push_back(job);
  }
  sim::SimConfig config;
  config.budget = total;
  config.cores = parallelism;
  config.tick_ms = tick_ms;
  config.builder_priorities = true;
  HistoryStore history;
  sim::Simulator simulator(sim_jobs, config, &history);
  const sim::SimResult result = simulator.Run();
  EXPECT_TRUE(result.completed);
  Decisions decisions;
  for (const auto& [job, start_ms] : result.started_ms) decisions.starts.push_back({start_ms, OutputOf(job)});
  std::sort(decisions.starts.begin(), decisions.starts.end());
  decisions.jobs_waited = result.decisions.jobs_waited;
  decisions.wait_ms_total = result.decisions.wait_ms_total;
  decisions.over_budget_starts = result.decisions.over_budget_starts;
  return decisions;
}

void ExpectSameDecisions(const std::vector<ReplayJob>& jobs, uint64_t total, int parallelism, int64_t tick_ms) {
  Decisions build = RunBuild(jobs, total, parallelism);
  const Decisions simulated = RunSimulator(jobs, total, parallelism, tick_ms);
  // Starts at one instant are compared as a set: the runner and the simulator list them in their own orders.
  std::sort(build.starts.begin(), build.starts.end());
  EXPECT_EQ(simulated.starts, build.starts);
  EXPECT_EQ(simulated.jobs_waited, build.jobs_waited);
  EXPECT_EQ(simulated.wait_ms_total, build.wait_ms_total);
  EXPECT_EQ(simulated.over_budget_starts, build.over_budget_starts);
  EXPECT_GT(build.jobs_waited, 0) << "a replay where memory never made a job wait pins nothing";
}

TEST(ReplayTest, BuildAndSimulatorStartTheSameJobsAtTheSameTimes) {
  // 8 GiB, 512 MiB reserve: heavy 3 GiB jobs two at a time, light ones filling around them, a chain at the end.
  std::vector<ReplayJob> jobs;
  for (int i = 0; i < 4; ++i) jobs.push_back({"3G", 400 + 100 * i, {}});
  for (int i = 0; i < 6; ++i) jobs.push_back({"1G", 200, {}});
  jobs.push_back({"2G", 300, {0, 1}});
  jobs.push_back({"5G", 500, {10}});
  jobs.push_back({"1G", 100, {11, 4}});
  ExpectSameDecisions(jobs, 8 * kGiB, 4, 100);
}

TEST(ReplayTest, ABigJobThatWaitsForTheRoomOfManySmallOnes) {
  std::vector<ReplayJob> jobs;
  for (int i = 0; i < 8; ++i) jobs.push_back({"700M", 300 + 100 * (i % 3), {}});
  jobs.push_back({"6G", 600, {}});
  for (int i = 0; i < 5; ++i) jobs.push_back({"1500M", 200, {8}});
  ExpectSameDecisions(jobs, 8 * kGiB, 8, 100);
}

TEST(ReplayTest, AJobOverTheBudgetRunsAloneOnBothSides) {
  std::vector<ReplayJob> jobs = {{"2G", 300, {}}, {"12G", 500, {}}, {"2G", 200, {}}, {"3G", 400, {1}}};
  ExpectSameDecisions(jobs, 8 * kGiB, 4, 100);
}

}  // namespace
}  // namespace headroom
