// Tests for the build guard: arming, stall detection and undo over fake v1 and v2 trees, the watcher that
// undoes the guard when its owner dies, victim choice, and real v1 cgroups (root: fail on CI, skip elsewhere).
#include "headroom/memory/build_guard.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "headroom/admission/safety_net.h"
#include "headroom/memory/job_cgroups.h"
#include "headroom/memory/memory_parsers.h"
#include "headroom/memory/memory_probe.h"
#include "headroom/report/summary.h"
#include "memory_test_support.h"

namespace headroom {
namespace {

using memory_test::FakeRoot;

using memory_test::ReadText;

bool ProcessExists(pid_t pid) { return pid > 0 && kill(pid, 0) == 0; }

// --- cgroup v1 over a fake tree (the kernel's side is played by hand).

struct FakeV1Build {
  FakeRoot fake;
  BuildGuardOptions options;
  FakeV1Build() {
    fake.Write("mem/hr/memory.limit_in_bytes", "9223372036854771712\n");
    fake.Write("mem/hr/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n");
    fake.Write("mem/hr/cgroup.event_control", "");
    fake.Write("mem/hr/job-1/cgroup.procs", "");
    fake.Write("frz/hr/job-1/freezer.state", "FROZEN\n");
    options.version = CgroupVersion::kV1;
    options.group_dir = fake.Path("mem/hr");
    options.v1_freezer_group_dir = fake.Path("frz/hr");
    options.limit_bytes = 300 * kMiB;
  }
  void KernelSays(bool under_oom) {
    fake.Write("mem/hr/memory.oom_control",
               fmt::format("oom_kill_disable 1\nunder_oom {}\noom_kill 0\n", under_oom ? 1 : 0));
  }
};

TEST(BuildGuardV1Test, ArmCapsTheGroupAndTurnsItsOomKillerOff) {
  FakeV1Build build;
  build.options.start_watcher = false;
  std::string err;
  auto guard = BuildGuard::Arm(build.options, &err);
  ASSERT_NE(guard, nullptr) << err;
  EXPECT_TRUE(guard->armed());
  EXPECT_EQ(ReadText(build.fake.Path("mem/hr/memory.limit_in_bytes")), std::to_string(300 * kMiB));
  EXPECT_EQ(ReadText(build.fake.Path("mem/hr/memory.oom_control")), "1");
  EXPECT_NE(guard->Describe().find("cgroup v1"), std::string::npos) << guard->Describe();
  EXPECT_NE(guard->Describe().find("300 MiB"), std::string::npos) << guard->Describe();
}

TEST(BuildGuardV1Test, UnderOomIsAStall) {
  FakeV1Build build;
  build.options.start_watcher = false;
  std::string err;
  auto guard = BuildGuard::Arm(build.options, &err);
  ASSERT_NE(guard, nullptr) << err;
  build.KernelSays(false);
  EXPECT_FALSE(guard->Check(1000).stalled);
  build.KernelSays(true);
  GuardCheck check = guard->Check(1200);
  EXPECT_TRUE(check.stalled);
  EXPECT_NE(check.detail.find("300 MiB"), std::string::npos) << check.detail;
  build.KernelSays(false);
  EXPECT_FALSE(guard->Check(1400).stalled);
}

TEST(BuildGuardV1Test, ReleaseLiftsTheLimitRestoresTheOomKillerAndThaws) {
  FakeV1Build build;
  build.options.start_watcher = false;
  std::string err;
  auto guard = BuildGuard::Arm(build.options, &err);
  ASSERT_NE(guard, nullptr) << err;
  guard->Release();
  EXPECT_FALSE(guard->armed());
  EXPECT_EQ(ReadText(build.fake.Path("mem/hr/memory.limit_in_bytes")), "-1");
  EXPECT_EQ(ReadText(build.fake.Path("mem/hr/memory.oom_control")), "0");
  EXPECT_EQ(ReadText(build.fake.Path("frz/hr/job-1/freezer.state")), "THAWED");
  build.KernelSays(true);
  EXPECT_FALSE(guard->Check(2000).stalled) << "a released guard reports nothing";
}

TEST(BuildGuardV1Test, UnwritableGroupMeansNoGuard) {
  FakeV1Build build;
  build.options.group_dir = build.fake.Path("mem/missing");
  std::string err;
  EXPECT_EQ(BuildGuard::Arm(build.options, &err), nullptr);
  EXPECT_NE(err.find("mem/missing"), std::string::npos) << err;
}

TEST(BuildGuardV1Test, NoGroupOrNoBudgetMeansNoGuard) {
  std::string err;
  BuildGuardOptions none;
  EXPECT_EQ(BuildGuard::Arm(none, &err), nullptr);
  EXPECT_FALSE(err.empty());
  FakeV1Build build;
  build.options.limit_bytes = 0;
  EXPECT_EQ(BuildGuard::Arm(build.options, &err), nullptr);
  EXPECT_NE(err.find("budget"), std::string::npos) << err;
}

// The limit counter: memory.failcnt on v1, read by each tick and afresh at a job's end, and never going down.
TEST(BuildGuardV1Test, LimitHitsFollowTheGroupsFailcnt) {
  FakeV1Build build;
  build.options.start_watcher = false;
  build.fake.Write("mem/hr/memory.failcnt", "5\n");
  std::string err;
  auto guard = BuildGuard::Arm(build.options, &err);
  ASSERT_NE(guard, nullptr) << err;
  EXPECT_EQ(guard->limit_hits(), 5u) << "counted from arming, so a job started before the first tick compares";
  build.fake.Write("mem/hr/memory.failcnt", "9\n");
  EXPECT_EQ(guard->limit_hits(), 5u) << "limit_hits() is the last check's figure, no read";
  guard->Check(1000);
  EXPECT_EQ(guard->limit_hits(), 9u);
  build.fake.Write("mem/hr/memory.failcnt", "12\n");
  EXPECT_EQ(guard->ReadLimitHits(), 12u);
  build.fake.Write("mem/hr/memory.failcnt", "0\n");  // someone reset it: a job's start must not look later
  EXPECT_EQ(guard->ReadLimitHits(), 12u);
}

// --- The watcher: the guard's owner dying (any way) must not leave the build capped and paused.

TEST(BuildGuardWatcherTest, UndoesTheGuardWhenItsOwnerGoesAwayWithoutReleasing) {
  FakeV1Build build;
  std::string err;
  auto guard = BuildGuard::Arm(build.options, &err);
  ASSERT_NE(guard, nullptr) << err;
  pid_t watcher = guard->watcher_pid();
  ASSERT_GT(watcher, 0);
  EXPECT_TRUE(ProcessExists(watcher));
  EXPECT_EQ(ReadText(build.fake.Path("mem/hr/memory.oom_control")), "1");
  // What headroom's death (SIGKILL included) does to the watcher: its keep-alive pipe closes, no verdict.
  guard->AbandonWatcherForTest();
  EXPECT_EQ(ReadText(build.fake.Path("mem/hr/memory.limit_in_bytes")), "-1");
  EXPECT_EQ(ReadText(build.fake.Path("mem/hr/memory.oom_control")), "0");
  EXPECT_EQ(ReadText(build.fake.Path("frz/hr/job-1/freezer.state")), "THAWED");
  EXPECT_FALSE(ProcessExists(watcher)) << "the watcher was reaped";
}

TEST(BuildGuardWatcherTest, StandsDownWhenReleasedAndIsReaped) {
  FakeV1Build build;
  std::string err;
  auto guard = BuildGuard::Arm(build.options, &err);
  ASSERT_NE(guard, nullptr) << err;
  pid_t watcher = guard->watcher_pid();
  guard->Release();
  EXPECT_EQ(guard->watcher_pid(), -1);
  EXPECT_FALSE(ProcessExists(watcher));
  EXPECT_EQ(ReadText(build.fake.Path("mem/hr/memory.oom_control")), "0");
}

TEST(BuildGuardWatcherTest, SurvivesTheInterruptSignalsOfItsProcessGroup) {
  FakeV1Build build;
  std::string err;
  auto guard = BuildGuard::Arm(build.options, &err);
  ASSERT_NE(guard, nullptr) << err;
  pid_t watcher = guard->watcher_pid();
  // A Ctrl-C reaches the terminal's foreground group; the watcher is in a group of its own and ignores it.
  EXPECT_EQ(getpgid(watcher), watcher);
  ASSERT_EQ(kill(watcher, SIGINT), 0);
  ASSERT_EQ(kill(watcher, SIGTERM), 0);
  ASSERT_EQ(kill(watcher, SIGHUP), 0);
  int status;
  EXPECT_EQ(waitpid(watcher, &status, WNOHANG), 0) << "the watcher died of an interrupt signal";
  guard->AbandonWatcherForTest();
  EXPECT_EQ(ReadText(build.fake.Path("mem/hr/memory.oom_control")), "0");
}

// --- cgroup v2 over a fake tree.

struct FakeV2Build {
  FakeRoot fake;
  BuildGuardOptions options;
  FakeV2Build() {
    fake.Write("cg/hr/memory.max", "max\n");
    fake.Write("cg/hr/memory.high", "max\n");
    fake.Write("cg/hr/memory.current", "0\n");
    Events(3, 0, 0, 0);  // counts from before the guard do not count
    Pressure(1'000'000);
    fake.Write("cg/hr/job-1/cgroup.freeze", "1\n");
    fake.Write("cg/hr/job-1/cgroup.procs", "");
    options.version = CgroupVersion::kV2;
    options.group_dir = fake.Path("cg/hr");
    options.limit_bytes = 1024 * kMiB;
    options.start_watcher = false;
  }
  void Events(int high, int max, int oom, int oom_kill) {
    fake.Write("cg/hr/memory.events", fmt::format("low 0\nhigh {}\nmax {}\noom {}\noom_kill {}\n", high, max, oom,
                                                  oom_kill));
  }
  void Pressure(uint64_t some_total_us) {
    fake.Write("cg/hr/memory.pressure",
               fmt::format("some avg10=0.00 avg60=0.00 avg300=0.00 total={}\nfull avg10=0.00 avg60=0.00 "
                           "avg300=0.00 total=0\n",
                           some_total_us));
  }
  void Current(uint64_t bytes) { fake.Write("cg/hr/memory.current", std::to_string(bytes) + "\n"); }
};

TEST(BuildGuardV2Test, ArmPutsMemoryHighBelowMemoryMax) {
  FakeV2Build build;
  std::string err;
  auto guard = BuildGuard::Arm(build.options, &err);
  ASSERT_NE(guard, nullptr) << err;
  EXPECT_EQ(ReadText(build.fake.Path("cg/hr/memory.max")), std::to_string(1024 * kMiB));
  EXPECT_EQ(guard->high_bytes(), 896 * kMiB);  // an eighth below
  EXPECT_EQ(ReadText(build.fake.Path("cg/hr/memory.high")), std::to_string(896 * kMiB));
  EXPECT_NE(guard->Describe().find("memory.high"), std::string::npos) << guard->Describe();
}

TEST(BuildGuardV2Test, SmallLimitsKeepAtLeastThirtyTwoMebibytesOfGap) {
  FakeV2Build build;
  build.options.limit_bytes = 100 * kMiB;
  std::string err;
  auto guard = BuildGuard::Arm(build.options, &err);
  ASSERT_NE(guard, nullptr) << err;
  EXPECT_EQ(guard->high_bytes(), 68 * kMiB);
}

TEST(BuildGuardV2Test, ThrottledAboveHighUnderPressureIsAStall) {
  FakeV2Build build;
  std::string err;
  auto guard = BuildGuard::Arm(build.options, &err);
  ASSERT_NE(guard, nullptr) << err;
  EXPECT_FALSE(guard->Check(1000).stalled);  // first check: the PSI baseline
  // 200 ms later: throttled since, above high, and stalled 100 ms of the 200 (50%).
  build.Events(5, 0, 0, 0);
  build.Current(1000 * kMiB);
  build.Pressure(1'100'000);
  GuardCheck check = guard->Check(1200);
  EXPECT_TRUE(check.stalled);
  EXPECT_NE(check.detail.find("memory.high"), std::string::npos) << check.detail;
  EXPECT_NE(check.detail.find("50%"), std::string::npos) << check.detail;
}

TEST(BuildGuardV2Test, ThrottlingWithoutPressureOrBelowHighIsNoStall) {
  FakeV2Build build;
  std::string err;
  auto guard = BuildGuard::Arm(build.options, &err);
  ASSERT_NE(guard, nullptr) << err;
  guard->Check(1000);
  build.Events(5, 0, 0, 0);
  build.Current(1000 * kMiB);
  build.Pressure(1'002'000);  // 1% stalled: reclaim keeps up
  EXPECT_FALSE(guard->Check(1200).stalled);
  build.Events(7, 0, 0, 0);
  build.Current(800 * kMiB);  // back under high
  build.Pressure(1'200'000);
  EXPECT_FALSE(guard->Check(1400).stalled);
  build.Current(1000 * kMiB);  // above high, but no throttling since the last check
  build.Pressure(1'300'000);
  EXPECT_FALSE(guard->Check(1600).stalled);
}

TEST(BuildGuardV2Test, ThrottlingCountsAloneWithoutPressureFile) {
  FakeV2Build build;
  build.fake.Remove("cg/hr/memory.pressure");
  std::string err;
  auto guard = BuildGuard::Arm(build.options, &err);
  ASSERT_NE(guard, nullptr) << err;
  guard->Check(1000);
  build.Events(4, 0, 0, 0);
  build.Current(900 * kMiB);
  EXPECT_TRUE(guard->Check(1200).stalled);
}

TEST(BuildGuardV2Test, ReachingMaxIsAStallAndKernelKillsAreCounted) {
  FakeV2Build build;
  std::string err;
  auto guard = BuildGuard::Arm(build.options, &err);
  ASSERT_NE(guard, nullptr) << err;
  guard->Check(1000);
  build.Events(3, 2, 1, 1);
  GuardCheck check = guard->Check(1200);
  EXPECT_TRUE(check.stalled);
  EXPECT_EQ(check.kernel_oom_kills, 1u);
  EXPECT_NE(check.detail.find("memory.max"), std::string::npos) << check.detail;
  EXPECT_EQ(guard->Check(1400).kernel_oom_kills, 0u) << "each kill is reported once";
}

// v2's counter is memory.events "max"; reading it at a job's end must not hide the rise from the next tick.
TEST(BuildGuardV2Test, LimitHitsFollowMemoryEventsMax) {
  FakeV2Build build;
  build.Events(3, 4, 0, 0);
  std::string err;
  auto guard = BuildGuard::Arm(build.options, &err);
  ASSERT_NE(guard, nullptr) << err;
  EXPECT_EQ(guard->limit_hits(), 4u);
  build.Events(3, 6, 0, 0);
  EXPECT_EQ(guard->limit_hits(), 4u);
  EXPECT_EQ(guard->ReadLimitHits(), 6u);
  EXPECT_TRUE(guard->Check(1000).stalled) << "the tick still sees memory.max reached";
  build.Events(3, 8, 0, 0);
  guard->Check(1200);
  EXPECT_EQ(guard->limit_hits(), 8u);
}

TEST(BuildGuardV2Test, ReleaseLiftsBothLimitsAndThawsJobs) {
  FakeV2Build build;
  std::string err;
  auto guard = BuildGuard::Arm(build.options, &err);
  ASSERT_NE(guard, nullptr) << err;
  guard->Release();
  EXPECT_EQ(ReadText(build.fake.Path("cg/hr/memory.max")), "max");
  EXPECT_EQ(ReadText(build.fake.Path("cg/hr/memory.high")), "max");
  EXPECT_EQ(ReadText(build.fake.Path("cg/hr/job-1/cgroup.freeze")), "0");
}

TEST(BuildGuardV2Test, WatcherUndoesV2TooWhenAbandoned) {
  FakeV2Build build;
  build.options.start_watcher = true;
  std::string err;
  auto guard = BuildGuard::Arm(build.options, &err);
  ASSERT_NE(guard, nullptr) << err;
  guard->AbandonWatcherForTest();
  EXPECT_EQ(ReadText(build.fake.Path("cg/hr/memory.max")), "max");
  EXPECT_EQ(ReadText(build.fake.Path("cg/hr/memory.high")), "max");
  EXPECT_EQ(ReadText(build.fake.Path("cg/hr/job-1/cgroup.freeze")), "0");
}

// --- Who pays for a stall.

RunningJob Job(uint64_t id, uint64_t rss) {
  RunningJob job;
  job.id = id;
  job.rss = rss;
  return job;
}

TEST(ChooseGuardVictimTest, YoungestJobHoldingRealMemory) {
  std::vector<RunningJob> running = {Job(1, 500 * kMiB), Job(2, 200 * kMiB), Job(3, 1 * kMiB)};
  EXPECT_EQ(ChooseGuardVictim(running, false, 10 * kMiB), std::optional<uint64_t>(2));
}

TEST(ChooseGuardVictimTest, YoungestWhenNoneButTheOldestHoldsMuch) {
  std::vector<RunningJob> running = {Job(1, 500 * kMiB), Job(2, 1 * kMiB), Job(3, 2 * kMiB)};
  EXPECT_EQ(ChooseGuardVictim(running, false, 10 * kMiB), std::optional<uint64_t>(3));
}

TEST(ChooseGuardVictimTest, TheOldestOnlyWhenItRunsAlone) {
  std::vector<RunningJob> alone = {Job(7, 900 * kMiB)};
  EXPECT_EQ(ChooseGuardVictim(alone, false, 10 * kMiB), std::optional<uint64_t>(7));
}

TEST(ChooseGuardVictimTest, NoSecondKillWhileOneIsFreeingMemory) {
  std::vector<RunningJob> running = {Job(1, 500 * kMiB), Job(2, 200 * kMiB)};
  EXPECT_EQ(ChooseGuardVictim(running, true, 10 * kMiB), std::nullopt);
  EXPECT_EQ(ChooseGuardVictim({}, false, 10 * kMiB), std::nullopt);
}

// --- What the summary says about the guard.

// The summary lines of a build whose passes decided `passes` (added up as the builder does).
std::vector<std::string> SummaryOf(std::initializer_list<MemoryDecisions> passes) {
  MemoryDecisions total;
  for (const MemoryDecisions& pass : passes) AddDecisions(&total, pass);
  return SummaryLines(BuildTimeline(), total);
}

bool Says(const std::vector<std::string>& lines, const std::string& line) {
  return std::find(lines.begin(), lines.end(), line) != lines.end();
}

TEST(GuardSummaryTest, SaysWhatGuardsTheBuildAndWhatItCost) {
  MemoryDecisions unguarded;
  unguarded.budget_bytes = 1024 * kMiB;
  unguarded.guard = "no build guard: no per-job cgroups";
  std::vector<std::string> lines = SummaryLines(BuildTimeline(), unguarded);
  EXPECT_EQ(std::count(lines.begin(), lines.end(), "no build guard: no per-job cgroups"), 1);

  MemoryDecisions stalled;
  stalled.guard = "build guard: cgroup v1";
  stalled.guard_stalls = 2;
  stalled.guard_kills = 3;
  EXPECT_TRUE(Says(SummaryOf({stalled}), "build guard: cgroup v1; stalled at the limit 2 times, 3 jobs killed and requeued"));

  MemoryDecisions failed_at_limit;
  failed_at_limit.guard = "build guard: cgroup v1";
  failed_at_limit.limit_failures = 1;
  failed_at_limit.requeues = 1;
  EXPECT_TRUE(Says(SummaryOf({failed_at_limit}), "build guard: cgroup v1; 1 job failed at the limit and was requeued"));
  EXPECT_TRUE(Says(SummaryOf({stalled, failed_at_limit, failed_at_limit}),
                   "build guard: cgroup v1; stalled at the limit 2 times, 3 jobs killed and requeued; 2 jobs "
                   "failed at the limit and were requeued"));

  MemoryDecisions early;
  early.guard = "build guard: cgroup v1";
  early.jobs_waited = 2;
  early.early_starts = 2;
  early.parks = 1;
  EXPECT_TRUE(Says(SummaryOf({early}),
                   "build guard: cgroup v1; 2 jobs started before the memory it needed was free (1 paused until it was)"));
}

// --- Real cgroup v1 (root): tasks wait at the limit instead of dying, and only headroom's choice frees them.

class RealGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MemoryProbeOptions probe_options;
    MemoryProbe probe(probe_options);
    CgroupLayout layout = probe.layout();
    HEADROOM_REQUIRE_OR_SKIP(layout.memory_version == CgroupVersion::kV1,
                             "needs a cgroup v1 memory controller (the v2 guard is tested over fake trees)");
    JobCgroupsOptions options = DefaultJobCgroupsOptions(layout);
    // Not in the shared guard group: builds running beside the tests may have capped it with the OOM killer off,
    // and groups made below it inherit that switch (a test expecting a kernel OOM kill would wait instead).
    options.shared_group_name.clear();
    options.build_name = fmt::format("headroom-guard-test-{}", getpid());
    options.recycle_max_leftover_bytes = 0;
    // This process plays headroom, and a "dead" headroom here lives on: a prepared child of its would not die with
    // it (PR_SET_PDEATHSIG) and would keep the watcher waiting for the job cgroups to empty.
    options.prepare_launches = false;
    std::string err;
    cgroups_ = JobCgroups::Create(options, &err);
    HEADROOM_REQUIRE_OR_SKIP(cgroups_ != nullptr, "cannot create cgroups (root needed): " + err);
    WriteWholeFile(cgroups_->build_dir() + "/memory.swappiness", "0", &err);
  }

  void TearDown() override {
    guard_.reset();
    cgroups_.reset();
  }

  void Arm(uint64_t limit) {
    BuildGuardOptions options;
    options.version = cgroups_->version();
    options.group_dir = cgroups_->build_dir();
    options.v1_freezer_group_dir = cgroups_->freezer_build_dir();
    options.limit_bytes = limit;
    std::string err;
    guard_ = BuildGuard::Arm(options, &err);
    ASSERT_NE(guard_, nullptr) << err;
    ASSERT_GE(guard_->notify_fd(), 0);
  }

  // Blocks until the kernel signals that the group's tasks wait at the limit (the guard's eventfd).
  void WaitForStall() {
    pollfd fd{guard_->notify_fd(), POLLIN, 0};
    ASSERT_EQ(poll(&fd, 1, 20'000), 1) << "tasks never reached the limit";
    GuardCheck check = guard_->Check(0);
    ASSERT_TRUE(check.stalled);
  }

  uint64_t OomKills(const std::string& dir) {
    return ParseKeyedValue(ReadText(dir + "/memory.oom_control"), "oom_kill").value_or(0);
  }

  std::unique_ptr<JobCgroups> cgroups_;
  std::unique_ptr<BuildGuard> guard_;
};

TEST_F(RealGuardTest, TasksWaitAtTheLimitAndKillingTheYoungestLetsTheOldestFinish) {
  Arm(200 * kMiB);
  std::string err;
  std::string older_dir = cgroups_->CreateJob(1, &err);
  std::string younger_dir = cgroups_->CreateJob(2, &err);
  ASSERT_FALSE(older_dir.empty() || younger_dir.empty()) << err;
  // The older one holds long enough for the younger to reach the limit beside it.
  auto older = memory_test::StartMemhog({"--mb", "130", "--ramp-ms", "100", "--hold-ms", "3000"}, older_dir);
  ASSERT_TRUE(memory_test::WaitForPeak(older));
  auto younger = memory_test::StartMemhog({"--mb", "130", "--ramp-ms", "100", "--hold-ms", "100"}, younger_dir);
  WaitForStall();
  // Both would die under the kernel's OOM killer; here they wait, and no kill is counted anywhere.
  EXPECT_EQ(OomKills(cgroups_->build_dir()) + OomKills(older_dir) + OomKills(younger_dir), 0u);
  kill(-younger.pid, SIGKILL);
  JobExit younger_exit = memory_test::ReapMemhog(younger, 2);
  EXPECT_EQ(younger_exit.term_signal, SIGKILL);
  JobExit older_exit = memory_test::ReapMemhog(older, 1);
  EXPECT_TRUE(older_exit.exited_normally);
  EXPECT_EQ(older_exit.exit_code, 0);
  EXPECT_FALSE(guard_->Check(0).stalled);
  EXPECT_EQ(OomKills(cgroups_->build_dir()) + OomKills(older_dir) + OomKills(younger_dir), 0u);
  EXPECT_TRUE(cgroups_->RemoveJob(1, &err)) << err;
  EXPECT_TRUE(cgroups_->RemoveJob(2, &err)) << err;
}

TEST_F(RealGuardTest, WatcherFreesAPausedTaskWhenTheGuardsOwnerIsGone) {
  Arm(150 * kMiB);
  std::string err;
  std::string dir = cgroups_->CreateJob(1, &err);
  ASSERT_FALSE(dir.empty()) << err;
  auto hog = memory_test::StartMemhog({"--mb", "250", "--ramp-ms", "100", "--hold-ms", "100"}, dir);
  WaitForStall();
  // As if headroom were SIGKILLed: the watcher lifts the limit, the task goes on as without headroom, and once
  // it has ended the watcher removes the cgroups (it returns only then, so the task did not stay paused).
  guard_->AbandonWatcherForTest();
  JobExit exit = memory_test::ReapMemhog(hog, 1);
  EXPECT_TRUE(exit.exited_normally);
  EXPECT_EQ(exit.exit_code, 0);
  struct stat st;
  EXPECT_NE(stat(cgroups_->build_dir().c_str(), &st), 0) << "the watcher removes the emptied cgroups";
  EXPECT_TRUE(cgroups_->RemoveJob(1, &err)) << err;
}

// Starts `dd` writing `mb` MiB to the tmpfs file `path` inside `cgroup_dir` (its messages discarded).
pid_t StartTmpfsWriter(const std::string& cgroup_dir, const std::string& path, int mb) {
  const std::string procs = cgroup_dir + "/cgroup.procs", of = "of=" + path, count = fmt::format("count={}", mb);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(procs.c_str(), O_WRONLY);
    if (fd < 0 || write(fd, "0", 1) != 1) _exit(126);
    close(fd);
    int null_fd = open("/dev/null", O_WRONLY);
    dup2(null_fd, STDERR_FILENO);
    execlp("dd", "dd", "if=/dev/zero", of.c_str(), "bs=1M", count.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// The kernel fact behind requeuing failures at the limit (build-guard.md): at a v1 limit with the OOM killer
// off, a write to a tmpfs file fails with ENOMEM instead of waiting, nothing is OOM-killed, and memory.failcnt,
// the guard's limit counter, rises. (The writer may then also wait at a page fault, its text reclaimed at the
// limit; a stall lifts the guard here, as headroom's kill of another job would free memory.)
TEST_F(RealGuardTest, ATmpfsWriteAtTheLimitFailsAndTheLimitCounterRises) {
  struct stat shm_dir;
  HEADROOM_REQUIRE_OR_SKIP(stat("/dev/shm", &shm_dir) == 0, "needs /dev/shm");
  // dd's pages are read into the page cache from here, outside the guard, so they are charged to this
  // process's cgroup: on a cold cache the guard's reclaim could evict dd's text before its first write, dd
  // would wait at that page fault instead, and lifting the cap would let its whole write succeed.
  ASSERT_EQ(std::system("cat \"$(command -v dd)\" >/dev/null && dd if=/dev/zero of=/dev/null bs=1M count=1 2>/dev/null"),
            0);
  Arm(150 * kMiB);
  std::string err;
  std::string holder_dir = cgroups_->CreateJob(1, &err);
  std::string writer_dir = cgroups_->CreateJob(2, &err);
  ASSERT_FALSE(holder_dir.empty() || writer_dir.empty()) << err;
  auto holder = memory_test::StartMemhog({"--mb", "110", "--hold-ms", "600000"}, holder_dir);
  ASSERT_TRUE(memory_test::WaitForPeak(holder));
  const uint64_t hits_before = guard_->ReadLimitHits();
  const std::string shm = fmt::format("/dev/shm/headroom-guard-test-{}", getpid());
  struct RemovedAtExit {
    const std::string& path;
    ~RemovedAtExit() { unlink(path.c_str()); }  // also when an assertion ends the test early
  } shm_cleanup{shm};
  const pid_t writer = StartTmpfsWriter(writer_dir, shm, 80);
  ASSERT_GT(writer, 0);
  const int writer_fd = static_cast<int>(syscall(SYS_pidfd_open, writer, 0));
  ASSERT_GE(writer_fd, 0) << "pidfd_open (Linux 5.3)";
  for (bool released = false;;) {
    pollfd fds[2] = {{writer_fd, POLLIN, 0}, {released ? -1 : guard_->notify_fd(), POLLIN, 0}};
    ASSERT_GT(poll(fds, 2, 20'000), 0) << "the writer neither ended nor stalled";
    if (fds[0].revents & POLLIN) break;
    if (guard_->Check(0).stalled) {
      guard_->Release();
      released = true;
    }
  }
  close(writer_fd);
  int status = 0;
  ASSERT_EQ(waitpid(writer, &status, 0), writer);
  kill(-holder.pid, SIGKILL);
  memory_test::ReapMemhog(holder, 1);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << "dd's write should have failed with ENOMEM";
  EXPECT_GT(guard_->ReadLimitHits(), hits_before);
  EXPECT_EQ(OomKills(cgroups_->build_dir()) + OomKills(holder_dir) + OomKills(writer_dir), 0u);
  EXPECT_TRUE(cgroups_->RemoveJob(1, &err)) << err;
  EXPECT_TRUE(cgroups_->RemoveJob(2, &err)) << err;
}

}  // namespace
}  // namespace headroom
