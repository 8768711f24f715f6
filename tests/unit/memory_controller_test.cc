// MemoryController inside the real Builder with fakes: a fake /proc tree for the budget, the fake
// process runner, and edge hints for estimates; checks that admission holds the budget, that
// --mem-budget binds, that light jobs run at full -j, that everything measured is learned, and that
// estimates of waiting edges follow what the build learned while they waited.
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <set>

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
#include "headroom/memory/build_ledger.h"
#include "headroom/memory/job_meter.h"
#include "headroom/memory/memory_probe.h"
#include "headroom/report/timeline.h"
#include "headroom/status/status.h"
#include "memory_test_support.h"

namespace headroom {
namespace {

using fakes::FakeProcessRunner;
using fakes::ManualClock;
using fakes::VirtualFileSystem;

// The fake runner, plus what a real one reports about memory: every job's ru_maxrss, and an OOM kill of
// the first run of chosen outputs (SIGKILL while the system OOM counter rises).
class MeasuringRunner : public fakes::AdjustingRunner {
 public:
  MeasuringRunner(VirtualFileSystem* fs, memory_test::FakeRoot* root) : AdjustingRunner(fs), root_(root) {}

  int64_t max_rss_kb = 0;
  std::set<std::string> oom_kill_once;  // "touch <output>" commands whose first run the kernel kills.

 private:
  void Adjust(JobExit* exit) override {
    exit->max_rss_kb = max_rss_kb;
    const std::string& command = CommandOf(*exit);
    if (oom_kill_once.erase(command) == 0) return;
    exit->exited_normally = false;
    exit->term_signal = SIGKILL;
    root_->Write("proc/vmstat", fmt::format("oom_kill {}\n", ++system_oom_kills_));
  }

  memory_test::FakeRoot* root_;
  int system_oom_kills_ = 0;
};

class QuietStatus : public fakes::NullStatus {
 public:
  void UpdateMemory(const MemoryStatus& memory) override {
    last_memory = memory;
    most_waiting = std::max(most_waiting, memory.jobs_waiting_for_memory);
  }
  void Warning(const std::string& message) override { warnings.push_back(message); }
  MemoryStatus last_memory;
  int most_waiting = 0;
  std::vector<std::string> warnings;
};

class MemoryControllerTest : public ::testing::Test {
 protected:
  // A machine with `total` bytes, all available, no cgroup limit, quiet pressure.
  void SetUpMachine(uint64_t total) {
    fake_.WriteQuietMachine(total);
  }

  // Builds `jobs` independent edges with the given memory hint ("" for none) at -j`parallelism`.
  void Build(int jobs, const std::string& hint, int parallelism) {
    std::string manifest = "rule touch\n  command = " + command_ + "\n";
    std::string all = "build all: phony";
    for (int i = 0; i < jobs; ++i) {
      manifest += fmt::format("build o{}: touch\n", i);
      if (!hint.empty()) manifest += fmt::format("  headroom_mem = {}\n", hint);
      all += fmt::format(" o{}", i);
    }
    ManifestParser parser(&state_, &fs_);
    std::string err;
    ASSERT_TRUE(parser.ParseTest(manifest + all + "\n", &err)) << err;

    MemoryProbe probe(memory_test::FakeProbeOptions(fake_, &clock_));
    JobMeter meter(std::unique_ptr<JobCgroups>(), memory_test::FakeMeterOptions(fake_, /*use_cgroups=*/false));
    Estimator estimator(&history_, {});
    MemoryController controller({&probe, &meter, &estimator, &log_, &status_, &clock_, ledger_dir_}, memory_, false);

    config_.parallelism = parallelism;
    Builder builder(&state_, config_, &log_, &deps_log_, &fs_, &status_, &clock_);
    builder.set_runner(&runner_);
    builder.set_job_controller(&controller);
    controller.set_timeline(&timeline_);
    // As ninja_main wires it: the critical path asks for every edge's estimate before anything runs.
    builder.set_edge_cost([&controller](const Edge* edge) { return controller.EdgeCost(edge); });
    ASSERT_TRUE(builder.AddTarget("all", &err)) << err;
    ASSERT_EQ(BuildResult::kSucceeded, builder.Build(&err)) << err;
    budget_ = controller.budget_bytes();
    decisions_ = controller.decisions();
  }

  memory_test::FakeRoot fake_;
  State state_;
  VirtualFileSystem fs_;
  MeasuringRunner runner_{&fs_, &fake_};
  ManualClock clock_;
  BuildConfig config_;
  MemoryConfig memory_;
  BuildLog log_;
  DepsLog deps_log_;
  HistoryStore history_;
  QuietStatus status_;
  BuildTimeline timeline_;
  uint64_t budget_ = 0;
  MemoryDecisions decisions_;
  std::string ledger_dir_;  // "" : no machine-wide ledger
  std::string command_ = "touch $out";
};

TEST_F(MemoryControllerTest, HoldsTheBudgetWhereParallelismWouldNot) {
  SetUpMachine(8 * kGiB);
  // 1.5 GiB each, 8 GiB machine, 512 MiB reserve: five fit at once, -j8 would start six.
  Build(6, "1536M", 8);
  EXPECT_EQ(8 * kGiB, budget_);
  EXPECT_EQ(5u, runner_.max_running);
  EXPECT_EQ(6u, runner_.commands_run.size());
}

// A walk over the ready queue stops after MemoryController::kWaitingWindow refusals: edges beyond it are not
// described, so a cold build with thousands of ready jobs keeps no state for each of them.
TEST_F(MemoryControllerTest, AWalkLooksAtNoMoreThanAWindowOfWaitingEdges) {
  SetUpMachine(8 * kGiB);
  Build(400, "1536M", 400);  // five fit at once
  EXPECT_EQ(5u, runner_.max_running);
  EXPECT_EQ(400u, runner_.commands_run.size());
  EXPECT_GT(status_.most_waiting, 0);
  EXPECT_LE(status_.most_waiting, 256);
}

TEST_F(MemoryControllerTest, MemBudgetFlagBinds) {
  SetUpMachine(8 * kGiB);
  memory_.budget_bytes = 3 * kGiB;
  Build(6, "1G", 8);
  EXPECT_EQ(3 * kGiB, budget_);
  EXPECT_EQ(2u, runner_.max_running);
}

TEST_F(MemoryControllerTest, LightJobsRunAtFullParallelism) {
  SetUpMachine(8 * kGiB);
  Build(12, "64M", 8);
  EXPECT_EQ(8u, runner_.max_running);
}

TEST_F(MemoryControllerTest, AJobLargerThanTheBudgetStillRunsAloneWithAWarning) {
  SetUpMachine(2 * kGiB);
  Build(2, "4G", 4);
  EXPECT_EQ(1u, runner_.max_running);
  EXPECT_EQ(2u, runner_.commands_run.size());
  ASSERT_FALSE(status_.warnings.empty());
  EXPECT_NE(std::string::npos, status_.warnings[0].find("running it alone"));
}

// A job that compiles in sccache's server runs (the fake runner takes any command); the build says why, once.
TEST_F(MemoryControllerTest, AJobThatCompilesInSccachesServerIsNamedOnce) {
  SetUpMachine(8 * kGiB);
  command_ = "sccache c++ -O2 -c $out.cc -o $out";
  Build(3, "", 8);
  EXPECT_EQ(3u, runner_.commands_run.size());
  ASSERT_EQ(1u, status_.warnings.size());
  EXPECT_NE(std::string::npos, status_.warnings[0].find("compiles in sccache's server")) << status_.warnings[0];
}

TEST_F(MemoryControllerTest, FinishedJobsAreLearned) {
  SetUpMachine(8 * kGiB);
  Build(3, "64M", 4);
  EXPECT_EQ(3u, history_.edge_count());
  EXPECT_NE(nullptr, history_.FindEdge("o0", log_.HashCommand("touch o0")));
}

TEST_F(MemoryControllerTest, WaitingEdgesFollowTheClassHistoryLearnedDuringTheBuild) {
  SetUpMachine(8 * kGiB);
  runner_.max_rss_kb = 3 * 1024 * 1024;  // every touch job turns out to need 3 GiB.
  Build(3, "", 1);
  const auto& jobs = timeline_.jobs();
  ASSERT_EQ(3u, jobs.size());
  // All three were estimated before anything ran (critical path); only the first had to go on the prior.
  EXPECT_EQ("prior", jobs[0].estimate_source);
  EXPECT_EQ(256ull << 20, jobs[0].estimate_bytes);
  const uint64_t class_estimate = static_cast<uint64_t>(3.0 * kGiB * 1.15);  // p90 of 1 job x1.15
  for (size_t i = 1; i < jobs.size(); ++i) {
    EXPECT_EQ("class history", jobs[i].estimate_source) << jobs[i].output;
    EXPECT_EQ(class_estimate, jobs[i].estimate_bytes) << jobs[i].output;
  }
}

TEST_F(MemoryControllerTest, AnOomRequeuesRaisedEstimateOutlivesLaterClassHistory) {
  SetUpMachine(8 * kGiB);
  runner_.max_rss_kb = 2 * 1024 * 1024;
  runner_.oom_kill_once = {"touch o0"};
  Build(3, "", 1);
  const auto& jobs = timeline_.jobs();
  ASSERT_EQ(4u, jobs.size());  // o0 twice
  EXPECT_EQ("o0", jobs[0].output);
  EXPECT_EQ("oom-killed", jobs[0].outcome);
  // The retry needs at least 1.5 x the 2 GiB it was killed at, although finished jobs of its class say 2.3 GiB.
  auto retry = std::find_if(jobs.begin() + 1, jobs.end(), [](const TimelineJob& j) { return j.output == "o0"; });
  ASSERT_NE(retry, jobs.end());
  EXPECT_GE(retry->estimate_bytes, 3 * kGiB);
  EXPECT_EQ("ok", retry->outcome);
}

// --- the machine-wide ledger (memory_controller_ledger.cc): other builds' reservations, nested builds ---

class MemoryControllerLedgerTest : public MemoryControllerTest {
 protected:
  void SetUp() override { ledger_dir_ = fake_.Path("ledger"); }

  // Another build's entry in the same ledger, owing `owed` bytes; parent_id names an outer build it runs in.
  std::unique_ptr<BuildLedger> OtherBuild(uint64_t owed, const std::string& cgroup, const std::string& parent_id = "",
                                          int64_t parent_job = -1) {
    LedgerEntry entry;
    entry.id = "other-" + std::to_string(++others_);
    entry.cgroup = cgroup;
    entry.parent_id = parent_id;
    entry.parent_job = parent_job;
    entry.owed_bytes = owed;
    return OpenEntry(entry);
  }
  std::unique_ptr<BuildLedger> OpenEntry(const LedgerEntry& entry) {
    std::string err;
    std::unique_ptr<BuildLedger> ledger = BuildLedger::Open(ledger_dir_, entry, &err);
    EXPECT_NE(nullptr, ledger) << err;
    return ledger;
  }
  int others_ = 0;
};

TEST_F(MemoryControllerLedgerTest, WhatAnotherBuildStillOwesIsNotPlannedOn) {
  SetUpMachine(8 * kGiB);
  // 8 GiB, the other build's jobs will still grow by 3 GiB, 512 MiB reserve: three 1.5 GiB jobs fit, not five.
  auto other = OtherBuild(3 * kGiB, "/");
  Build(6, "1536M", 8);
  EXPECT_EQ(3u, runner_.max_running);
  EXPECT_EQ(6u, runner_.commands_run.size());
  EXPECT_EQ(1, decisions_.other_builds_most);
  EXPECT_EQ(3 * kGiB, decisions_.others_owed_most);
  EXPECT_EQ("", decisions_.ledger);
}

TEST_F(MemoryControllerLedgerTest, WhereTheMachineBindsEveryBuildCountsWhereverItLives) {
  SetUpMachine(8 * kGiB);  // no cgroup limit: the machine's memory binds this build
  auto other = OtherBuild(3 * kGiB, "");  // a build that did not say where its jobs live
  Build(6, "1536M", 8);
  EXPECT_EQ(3u, runner_.max_running);
}

TEST_F(MemoryControllerLedgerTest, ADeadBuildsReservationsVanish) {
  SetUpMachine(8 * kGiB);
  OtherBuild(3 * kGiB, "/");  // closed at once, as a build that ended or died
  Build(6, "1536M", 8);
  EXPECT_EQ(5u, runner_.max_running);
  EXPECT_EQ(0, decisions_.other_builds_most);
}

TEST_F(MemoryControllerLedgerTest, EveryJobIsToldWhichOuterJobItRunsIn) {
  SetUpMachine(8 * kGiB);
  Build(2, "64M", 2);
  ASSERT_EQ(2u, runner_.environments.size());
  for (size_t i = 0; i < 2; ++i) {
    const std::vector<std::string>& environment = runner_.environments[i];
    ASSERT_EQ(1u, environment.size());
    EXPECT_EQ("HEADROOM_OUTER_JOB=" + ThisBuildId() + ":" + std::to_string(i + 1), environment[0]);
  }
}

TEST_F(MemoryControllerLedgerTest, ANestedBuildIsCountedOnceThroughItsJob) {
  SetUpMachine(8 * kGiB);
  // The first job (meter key 1, running to the end) runs a headroom build that still owes 3 GiB: that job counts
  // as 3 GiB, not its 1.5 GiB estimate plus 3 GiB for another build (three at once), nor 1.5 GiB alone (five).
  // 8 - 3 - 0.5 reserve leaves room for three more 1.5 GiB jobs beside it.
  auto nested = OtherBuild(3 * kGiB, "/", ThisBuildId(), 1);
  runner_.finish_newest_first = true;
  Build(6, "1536M", 8);
  EXPECT_EQ(4u, runner_.max_running);
  EXPECT_EQ(0, decisions_.other_builds_most);
}

// With none of its own jobs running, a build whose job does not fit beside another build's running jobs waits for
// them (polling, as the builder does for IdleRetryMs) rather than start it over budget; it starts once they end.
TEST_F(MemoryControllerLedgerTest, WithNothingOfItsOwnRunningABuildWaitsForAnotherBuildsJobs) {
  SetUpMachine(4 * kGiB);
  auto other = OtherBuild(3 * kGiB, "/");  // its jobs will still grow by 3 GiB: 1 GiB is left here
  int idle_waits = 0;
  uint64_t published_waiting = 0;
  runner_.on_idle_wait = [&]() {
    if (idle_waits == 0) {
      std::vector<LedgerEntry> seen = other->Others();  // what the other build reads of this one
      if (seen.size() == 1) published_waiting = seen[0].waiting_bytes;
    }
    if (++idle_waits == 3) other.reset();  // the other build ends
    clock_.now_ms += 200;
  };
  Build(1, "2G", 4);
  EXPECT_EQ(3, idle_waits);
  EXPECT_EQ(2 * kGiB, published_waiting);  // it asked the other build to leave its job's 2 GiB free
  EXPECT_EQ(1u, runner_.commands_run.size());
  EXPECT_EQ(0, decisions_.over_budget_starts);
  EXPECT_EQ(1, decisions_.jobs_waited);
}

// Another build waits for memory with nothing of its own running: what its next job needs is left free for it, so
// that this build does not take every byte its jobs give back before that build's poll can.
TEST_F(MemoryControllerLedgerTest, AnotherBuildsWaitingHeadIsLeftRoom) {
  SetUpMachine(8 * kGiB);
  LedgerEntry waiting;
  waiting.id = "waiting-1";
  waiting.cgroup = "/";
  waiting.waiting_bytes = 3 * kGiB;
  auto other = OpenEntry(waiting);
  Build(6, "1536M", 8);
  EXPECT_EQ(3u, runner_.max_running);  // 8 - 3 - 0.5 reserve: three 1.5 GiB jobs
}

// Two builds with nothing running, each head waiting for memory the other's published wait holds: the one with the
// lower ledger id goes first, the other holds back for it instead of starting its job over budget beside that wait.
// Returns how often this build waited idle before its job started (the other build ends after 3 waits).
class IdleWaitingBuildsTest : public MemoryControllerLedgerTest {
 protected:
  int IdleWaitsBeside(const std::string& other_id) {
    SetUpMachine(8 * kGiB);
    LedgerEntry waiting;
    waiting.id = other_id;
    waiting.cgroup = "/";
    waiting.waiting_bytes = 6 * kGiB;
    auto other = OpenEntry(waiting);
    int idle_waits = 0;
    runner_.on_idle_wait = [&]() {
      if (++idle_waits == 3) other.reset();  // the other build started its job and ended
      clock_.now_ms += 200;
    };
    Build(1, "4G", 4);
    EXPECT_EQ(1u, runner_.commands_run.size());
    return idle_waits;
  }
};

TEST_F(IdleWaitingBuildsTest, AnIdleBuildHoldsBackForAnotherIdleWaitingBuildWithALowerId) {
  EXPECT_EQ(3, IdleWaitsBeside("-first"));  // '-' sorts before every id ThisBuildId() makes (digits)
  EXPECT_EQ(0, decisions_.over_budget_starts);
}

TEST_F(IdleWaitingBuildsTest, TheIdleWaitingBuildWithTheLowestIdGoesFirst) {
  EXPECT_EQ(0, IdleWaitsBeside("zlast"));  // 'z' sorts after every id ThisBuildId() makes
  EXPECT_EQ(1, decisions_.over_budget_starts);
}

// A build run as a job of another: the outer build's waiting head may wait for this very job to end (it must run
// alone), and what the outer build holds includes this build, so neither holds this build back.
TEST_F(MemoryControllerLedgerTest, ANestedBuildIsNotHeldBackByItsOuterBuildsWaitingHead) {
  SetUpMachine(8 * kGiB);
  LedgerEntry outer_entry;
  outer_entry.id = "outer-1";
  outer_entry.cgroup = "/";
  outer_entry.used_bytes = 1 * kGiB;
  outer_entry.waiting_bytes = 6 * kGiB;
  auto outer = OpenEntry(outer_entry);
  setenv("HEADROOM_OUTER_JOB", "outer-1:3", 1);
  runner_.on_idle_wait = [&]() { clock_.now_ms += 200; };  // were it held back, its idle wait would run out
  Build(6, "1536M", 8);
  unsetenv("HEADROOM_OUTER_JOB");
  EXPECT_EQ(5u, runner_.max_running);  // as if alone: 8 - 0.5 reserve holds five
  EXPECT_EQ(0, decisions_.over_budget_starts);
}

TEST_F(MemoryControllerLedgerTest, WithoutALedgerDirectoryJobsGetNoOuterJobVariable) {
  ledger_dir_.clear();
  SetUpMachine(8 * kGiB);
  Build(1, "64M", 1);
  ASSERT_EQ(1u, runner_.environments.size());
  EXPECT_TRUE(runner_.environments[0].empty());
}

}  // namespace
}  // namespace headroom
