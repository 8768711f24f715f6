// Tests for JobCgroups and JobMeter with cgroups: file handling over a fake v2 tree, and end-to-end runs
// of memhog in real job cgroups (root needed: they fail on CI and skip elsewhere when unavailable).
#include "headroom/memory/job_cgroups.h"

#include <sys/stat.h>

#include <cstdio>
#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "headroom/exec/prepared_launch.h"
#include "headroom/exec/process_runner.h"
#include "headroom/memory/cgroup_tree.h"
#include "headroom/memory/job_meter.h"
#include "headroom/memory/memory_probe.h"
#include "memory_test_support.h"
#include "file_helpers.h"

namespace headroom {
namespace {

using test_files::Exists;

using memory_test::FakeRoot;

using memory_test::ReadText;

// --- Over a fake v2 tree (cgroupfs files are plain files there; the kernel's side is played by hand).

struct FakeV2Build {
  FakeRoot fake;
  JobCgroupsOptions options;
  FakeV2Build() {
    fake.Write("cg/cgroup.subtree_control", "");
    fake.Write("cg/hr/cgroup.subtree_control", "");  // what the kernel would create with the directory
    options.version = CgroupVersion::kV2;
    options.parent_dir = fake.Path("cg");
    options.build_name = "hr";
    options.v2_move_self_to_leaf = false;
  }
};

TEST(JobCgroupsFakeTest, V2EnablesMemoryForChildrenAndMakesJobDirs) {
  FakeV2Build build;
  std::string err;
  auto cgroups = JobCgroups::Create(build.options, &err);
  ASSERT_NE(cgroups, nullptr) << err;
  EXPECT_EQ(ReadText(build.fake.Path("cg/cgroup.subtree_control")), "+memory");
  EXPECT_EQ(ReadText(build.fake.Path("cg/hr/cgroup.subtree_control")), "+memory");
  std::string dir = cgroups->CreateJob(7, &err);
  EXPECT_EQ(dir, build.fake.Path("cg/hr/job-1"));  // numbered in order of creation, never reused
  EXPECT_TRUE(Exists(dir));
  EXPECT_EQ(cgroups->CreateJob(8, &err), build.fake.Path("cg/hr/job-2"));
}

TEST(JobCgroupsFakeTest, V2ReadsPeakCurrentAndOomKills) {
  FakeV2Build build;
  std::string err;
  auto cgroups = JobCgroups::Create(build.options, &err);
  ASSERT_NE(cgroups, nullptr) << err;
  cgroups->CreateJob(1, &err);
  build.fake.Write("cg/hr/job-1/memory.current", "1000\n");
  build.fake.Write("cg/hr/job-1/memory.peak", "5000\n");
  build.fake.Write("cg/hr/job-1/memory.events", "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\noom_group_kill 0\n");
  EXPECT_EQ(cgroups->CurrentBytes(1), 1000u);
  EXPECT_EQ(cgroups->PeakBytes(1), 5000u);
  EXPECT_EQ(cgroups->OomKills(1), 1u);
  EXPECT_EQ(cgroups->CurrentBytes(2), std::nullopt);  // unknown job
}

TEST(JobCgroupsFakeTest, V2WithoutMemoryPeakLeavesThePeakToSampling) {
  FakeV2Build build;
  std::string err;
  auto cgroups = JobCgroups::Create(build.options, &err);
  ASSERT_NE(cgroups, nullptr) << err;
  cgroups->CreateJob(1, &err);
  EXPECT_EQ(cgroups->PeakBytes(1), std::nullopt);  // kernels before 5.19
}

TEST(JobCgroupsFakeTest, V2FreezeAndThawWriteCgroupFreeze) {
  FakeV2Build build;
  std::string err;
  auto cgroups = JobCgroups::Create(build.options, &err);
  ASSERT_NE(cgroups, nullptr) << err;
  std::string dir = cgroups->CreateJob(3, &err);
  build.fake.Write("cg/hr/job-1/cgroup.freeze", "0\n");
  ASSERT_TRUE(cgroups->Freeze(3, &err)) << err;
  EXPECT_EQ(ReadText(dir + "/cgroup.freeze"), "1");
  ASSERT_TRUE(cgroups->Thaw(3, &err)) << err;
  EXPECT_EQ(ReadText(dir + "/cgroup.freeze"), "0");
}

// v1: a freeze that gives up (tasks keep "arriving": in a fake tree the freezer's cgroup.procs holds only the last
// task written, as a real one can when a moved task was exiting) must leave the freezer THAWED, since the caller
// then stops the job with SIGSTOP and resumes it with SIGCONT alone. Left FROZEN, it held a job for ever (a cold
// memhog build hung on it).
TEST(JobCgroupsFakeTest, V1FreezeThatGivesUpLeavesTheFreezerThawed) {
  FakeRoot fake;
  JobCgroupsOptions options;
  options.version = CgroupVersion::kV1;
  options.parent_dir = fake.Path("memory");
  options.v1_freezer_parent_dir = fake.Path("freezer");
  options.build_name = "hr";
  fake.Write("memory/.keep", "");
  fake.Write("freezer/.keep", "");
  std::string err;
  auto cgroups = JobCgroups::Create(options, &err);
  ASSERT_NE(cgroups, nullptr) << err;
  const std::string dir = cgroups->CreateJob(5, &err);
  ASSERT_FALSE(dir.empty()) << err;
  fake.Write("memory/hr/job-1/cgroup.procs", "4242\n4243\n");
  // What the kernel would create with the freezer directory.
  fake.Write("freezer/hr/job-1/freezer.state", "THAWED\n");
  fake.Write("freezer/hr/job-1/cgroup.procs", "");
  EXPECT_FALSE(cgroups->Freeze(5, &err));
  EXPECT_NE(err.find("faster than it could be frozen"), std::string::npos) << err;
  EXPECT_EQ(ReadText(fake.Path("freezer/hr/job-1/freezer.state")), "THAWED");
}

TEST(JobCgroupsFakeTest, RemoveJobRefusesWhileProcessesRemain) {
  FakeV2Build build;
  std::string err;
  auto cgroups = JobCgroups::Create(build.options, &err);
  ASSERT_NE(cgroups, nullptr) << err;
  cgroups->CreateJob(4, &err);
  build.fake.Write("cg/hr/job-1/cgroup.procs", "4242\n");
  EXPECT_EQ(cgroups->Pids(4), std::vector<pid_t>{4242});
  EXPECT_FALSE(cgroups->RemoveJob(4, &err));
  EXPECT_NE(err.find("still has processes"), std::string::npos) << err;
}

// A job that leaves only a little charge behind hands its cgroup to the next job, whose readings are then
// taken relative to the leftover; mkdir and rmdir of a memory cgroup cost more than a trivial job.
TEST(JobCgroupsFakeTest, RecyclesAnEmptiedCgroupAndReadsRelativeToWhatWasLeft) {
  FakeV2Build build;
  std::string err;
  auto cgroups = JobCgroups::Create(build.options, &err);
  ASSERT_NE(cgroups, nullptr) << err;
  std::string first = cgroups->CreateJob(1, &err);
  build.fake.Write("cg/hr/job-1/cgroup.procs", "");
  build.fake.Write("cg/hr/job-1/memory.current", "1000\n");
  build.fake.Write("cg/hr/job-1/memory.peak", "700000\n");
  build.fake.Write("cg/hr/job-1/memory.events", "oom 1\noom_kill 2\n");
  ASSERT_TRUE(cgroups->RemoveJob(1, &err)) << err;
  EXPECT_EQ(cgroups->spare_count(), 1u);
  EXPECT_TRUE(Exists(first));

  EXPECT_EQ(cgroups->CreateJob(2, &err), first);
  EXPECT_EQ(cgroups->spare_count(), 0u);
  EXPECT_EQ(ReadText(first + "/memory.peak"), "0");  // the reset: the kernel restarts the mark from here
  build.fake.Write("cg/hr/job-1/memory.current", "1500\n");
  build.fake.Write("cg/hr/job-1/memory.peak", "9000\n");
  EXPECT_EQ(cgroups->CurrentBytes(2), 500u);
  EXPECT_EQ(cgroups->PeakBytes(2), 8000u);
  EXPECT_EQ(cgroups->OomKills(2), 0u);  // the earlier job's kills are not this one's
  build.fake.Write("cg/hr/job-1/memory.events", "oom 2\noom_kill 3\n");
  EXPECT_EQ(cgroups->OomKills(2), 1u);
}

TEST(JobCgroupsFakeTest, KeepsNoCgroupThatStillHoldsMuchCharge) {
  FakeV2Build build;
  build.options.recycle_max_leftover_bytes = 4096;
  std::string err;
  auto cgroups = JobCgroups::Create(build.options, &err);
  ASSERT_NE(cgroups, nullptr) << err;
  std::string first = cgroups->CreateJob(1, &err);
  build.fake.Write("cg/hr/job-1/memory.current", "4097\n");
  cgroups->RemoveJob(1, &err);  // a fake directory with files cannot be removed; what matters is no reuse
  EXPECT_EQ(cgroups->spare_count(), 0u);
  EXPECT_NE(cgroups->CreateJob(2, &err), first);
}

TEST(JobCgroupsFakeTest, StopsRecyclingWhenThePeakCannotBeReset) {
  FakeV2Build build;
  std::string err;
  auto cgroups = JobCgroups::Create(build.options, &err);
  ASSERT_NE(cgroups, nullptr) << err;
  std::string first = cgroups->CreateJob(1, &err);
  build.fake.Write("cg/hr/job-1/memory.current", "0\n");
  ASSERT_TRUE(cgroups->RemoveJob(1, &err)) << err;
  ASSERT_EQ(cgroups->spare_count(), 1u);
  // No writable memory.peak (none before 5.19, read-only before 6.12): a fresh cgroup, and no more recycling.
  EXPECT_EQ(cgroups->CreateJob(2, &err), build.fake.Path("cg/hr/job-2"));
  build.fake.Write("cg/hr/job-2/memory.current", "0\n");
  cgroups->RemoveJob(2, &err);  // a fake directory with files cannot be removed; what matters is no reuse
  EXPECT_EQ(cgroups->spare_count(), 0u);
}

TEST(JobCgroupsFakeTest, UnwritableParentMeansNoCgroups) {
  FakeRoot fake;
  JobCgroupsOptions options;
  options.version = CgroupVersion::kV2;
  options.parent_dir = fake.Path("missing");
  options.build_name = "hr";
  options.v2_move_self_to_leaf = false;
  std::string err;
  EXPECT_EQ(JobCgroups::Create(options, &err), nullptr);
  EXPECT_FALSE(err.empty());
  options.version = CgroupVersion::kNone;
  EXPECT_EQ(JobCgroups::Create(options, &err), nullptr);
}

// Silently: no cgroup access is ordinary (the no-guard reason in -d explain and the summary says it).
TEST(JobMeterTest, FallsBackToSamplingWithoutAWarningWhenCgroupsAreUnavailable) {
  CgroupLayout none;
  JobMeter meter(none);
  EXPECT_FALSE(meter.uses_cgroups());
  EXPECT_EQ(meter.PrepareJob(1), "");
  EXPECT_TRUE(meter.TakeWarnings().empty());
  EXPECT_STREQ(PeakSourceName(PeakSource::kSampled), "sampled");
  EXPECT_STREQ(PeakSourceName(PeakSource::kCgroup), "cgroup");
  EXPECT_STREQ(PeakSourceName(PeakSource::kRusage), "rusage");
}

TEST(JobMeterTest, RusageWinsWhenNothingElseSawTheJob) {
  JobMeter meter(std::unique_ptr<JobCgroups>(), JobMeterOptions{});
  meter.PrepareJob(5);
  JobExit exit;
  exit.id = 5;
  exit.exited_normally = true;
  exit.max_rss_kb = 2048;
  JobMemoryResult result = meter.Finish(exit);
  EXPECT_EQ(result.peak_bytes, 2u * kMiB);
  EXPECT_EQ(result.peak_source, PeakSource::kRusage);
}

// --- End to end with real cgroups.

// A per-build cgroup under this process's own memory cgroup; its directory doubles as the "box" whose
// limit the jobs share.
class RealCgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MemoryProbeOptions probe_options;
    MemoryProbe probe(probe_options);
    layout_ = probe.layout();
    HEADROOM_REQUIRE_OR_SKIP(layout_.memory_version != CgroupVersion::kNone, "no cgroup memory controller");
    JobCgroupsOptions options = DefaultJobCgroupsOptions(layout_);
    // Not in the shared guard group: builds running beside the tests may have capped it with the OOM killer off,
    // and groups made below it inherit that switch (a test expecting a kernel OOM kill would wait instead).
    options.shared_group_name.clear();
    options.build_name = fmt::format("headroom-test-{}-{}", getpid(), ++counter_);
    // These jobs are memhog processes that join their cgroup themselves, never handed to a prepared child
    // (prepared_launch_test.cc covers those); one waiting beside them would only add to their readings.
    options.prepare_launches = false;
    std::string err;
    auto cgroups = JobCgroups::Create(options, &err);
    HEADROOM_REQUIRE_OR_SKIP(cgroups != nullptr, "cannot create cgroups (root needed): " + err);
    build_dir_ = cgroups->build_dir();
    version_ = cgroups->version();
    cgroups_ = cgroups.get();
    meter_ = std::make_unique<JobMeter>(std::move(cgroups));
  }

  void TearDown() override {
    meter_.reset();
    if (!build_dir_.empty()) EXPECT_FALSE(Exists(build_dir_)) << "left behind: " << build_dir_;
  }

  void LimitBox(uint64_t bytes) {
    bool v2 = version_ == CgroupVersion::kV2;
    std::string err;
    ASSERT_TRUE(WriteWholeFile(build_dir_ + (v2 ? "/memory.max" : "/memory.limit_in_bytes"), std::to_string(bytes),
                               &err))
        << err;
    // v1 would rather swap than OOM-kill when swap exists; the test wants the kill.
    if (v2) {
      WriteWholeFile(build_dir_ + "/memory.swap.max", "0", &err);
    } else {
      WriteWholeFile(build_dir_ + "/memory.swappiness", "0", &err);
    }
  }

  JobMemoryResult RunJob(JobId id, const std::vector<std::string>& args, JobExit* exit_out = nullptr) {
    std::string dir = meter_->PrepareJob(id);
    EXPECT_FALSE(dir.empty());
    memory_test::MemhogProcess memhog = memory_test::StartMemhog(args, dir);
    meter_->JobStarted(id, memhog.pid);
    JobExit exit = memory_test::ReapMemhog(memhog, id);
    if (exit_out != nullptr) *exit_out = exit;
    return meter_->Finish(exit);
  }

  static inline int counter_ = 0;
  CgroupLayout layout_;
  std::string build_dir_;
  CgroupVersion version_ = CgroupVersion::kNone;
  JobCgroups* cgroups_ = nullptr;
  std::unique_ptr<JobMeter> meter_;
};

TEST_F(RealCgroupTest, CgroupPeakCoversTheWholeTreeWhileRusageSeesOneProcess) {
  JobMemoryResult result = RunJob(1, {"--mb", "400", "--procs", "4", "--ramp-ms", "200", "--hold-ms", "100"});
  std::printf("cgroup peak %.1f MiB, ru_maxrss %.1f MiB\n", result.cgroup_peak_bytes / double(kMiB),
              result.rusage_peak_bytes / double(kMiB));
  EXPECT_EQ(result.peak_source, PeakSource::kCgroup);
  EXPECT_NEAR(static_cast<double>(result.peak_bytes), 400.0 * kMiB, 40.0 * kMiB);
  // ru_maxrss is the largest single process: about a quarter of the tree.
  EXPECT_NEAR(static_cast<double>(result.rusage_peak_bytes), 100.0 * kMiB, 25.0 * kMiB);
  EXPECT_FALSE(result.oom.oom_killed);
}

TEST_F(RealCgroupTest, JobOverTheBoxLimitIsReportedOomKilledWithItsPeak) {
  LimitBox(200 * kMiB);
  JobExit exit;
  JobMemoryResult result = RunJob(2, {"--mb", "400", "--ramp-ms", "200"}, &exit);
  EXPECT_FALSE(exit.exited_normally);
  EXPECT_EQ(exit.term_signal, SIGKILL);
  EXPECT_TRUE(result.oom.oom_killed) << result.oom.explanation;
  EXPECT_EQ(result.oom.evidence, OomEvidence::kStrong);
  std::printf("OOM-killed job peak %.1f MiB (box 200 MiB): %s\n", result.peak_bytes / double(kMiB),
              result.oom.explanation.c_str());
  EXPECT_GE(result.peak_bytes, 180 * kMiB);
  EXPECT_LE(result.peak_bytes, 210 * kMiB);
}

TEST_F(RealCgroupTest, OomKilledChildOfAMultiProcessJobIsStillAttributed) {
  LimitBox(200 * kMiB);
  JobExit exit;
  JobMemoryResult result = RunJob(3, {"--mb", "400", "--procs", "4", "--ramp-ms", "200"}, &exit);
  // The top process survives and exits 1, as nvcc does when a cicc is killed: no SIGKILL to go by.
  EXPECT_TRUE(exit.exited_normally);
  EXPECT_EQ(exit.exit_code, 1);
  EXPECT_TRUE(result.oom.oom_killed) << result.oom.explanation;
  EXPECT_EQ(result.oom.evidence, OomEvidence::kStrong);
}

TEST_F(RealCgroupTest, SystemCounterGivesWeakEvidenceWithoutAJobCgroup) {
  LimitBox(150 * kMiB);
  // Run memhog directly in the box (no job cgroup of its own): only the machine-wide counter is left.
  SystemOomCounter counter;
  std::optional<uint64_t> before = counter.Read();
  memory_test::MemhogProcess memhog = memory_test::StartMemhog({"--mb", "300"}, build_dir_);
  JobExit exit = memory_test::ReapMemhog(memhog, 9);
  OomFacts facts;
  facts.killed_by_sigkill = !exit.exited_normally && exit.term_signal == SIGKILL;
  facts.system_oom_kills_at_start = before;
  facts.system_oom_kills_at_end = counter.Read();
  OomVerdict verdict = AttributeOom(facts);
  EXPECT_TRUE(verdict.oom_killed) << verdict.explanation;
  EXPECT_EQ(verdict.evidence, OomEvidence::kWeak);
}

TEST_F(RealCgroupTest, FreezeStopsTheWholeTreeAndThawLetsItFinish) {
  std::string dir = meter_->PrepareJob(4);
  memory_test::MemhogProcess memhog =
      memory_test::StartMemhog({"--mb", "30", "--procs", "3", "--hold-ms", "1000"}, dir);
  meter_->JobStarted(4, memhog.pid);
  ASSERT_TRUE(memory_test::WaitForPeak(memhog));
  std::vector<pid_t> pids = cgroups_->Pids(4);
  EXPECT_EQ(pids.size(), 4u);
  bool frozen = meter_->Freeze(4);
  HEADROOM_REQUIRE_OR_SKIP(frozen || version_ == CgroupVersion::kV2 || !layout_.v1_freezer_dir.empty(),
                           "no freezer: the caller would SIGSTOP instead");
  ASSERT_TRUE(frozen);
  if (version_ == CgroupVersion::kV1) {
    std::string freezer_job =
        layout_.v1_freezer_dir + build_dir_.substr(build_dir_.rfind('/')) + dir.substr(dir.rfind('/'));
    std::string state = ReadText(freezer_job + "/freezer.state");
    EXPECT_TRUE(state == "FROZEN\n" || state == "FREEZING\n") << state;
    std::string members = ReadText(freezer_job + "/cgroup.procs");
    for (pid_t pid : pids) EXPECT_NE(members.find(std::to_string(pid)), std::string::npos) << pid;
  } else {
    // A frozen v2 cgroup says so in cgroup.events once every task stopped.
    EXPECT_NE(ReadText(dir + "/cgroup.freeze").find('1'), std::string::npos);
  }
  ASSERT_TRUE(meter_->Thaw(4));
  JobExit exit = memory_test::ReapMemhog(memhog, 4);
  EXPECT_TRUE(exit.success());
  meter_->Finish(exit);
}

TEST_F(RealCgroupTest, RecycledCgroupMeasuresTheNextJobAlone) {
  JobMemoryResult small = RunJob(6, {"--mb", "2"});
  EXPECT_EQ(small.peak_source, PeakSource::kCgroup);
  ASSERT_EQ(cgroups_->spare_count(), 1u) << "a job that leaves almost nothing behind hands its cgroup on";
  JobMemoryResult big = RunJob(7, {"--mb", "120", "--procs", "2"});
  EXPECT_EQ(cgroups_->spare_count(), 1u);
  EXPECT_EQ(big.peak_source, PeakSource::kCgroup);
  EXPECT_NEAR(static_cast<double>(big.peak_bytes), 120.0 * kMiB, 12.0 * kMiB);
  JobMemoryResult small_again = RunJob(8, {"--mb", "2"});
  EXPECT_LT(small_again.peak_bytes, 8 * kMiB) << "the previous job's high-water mark must not carry over";
}

TEST_F(RealCgroupTest, LiveSamplingSeesTheJobsCurrentUsage) {
  std::string dir = meter_->PrepareJob(5);
  memory_test::MemhogProcess memhog =
      memory_test::StartMemhog({"--mb", "120", "--procs", "2", "--hold-ms", "1000"}, dir);
  meter_->JobStarted(5, memhog.pid);
  ASSERT_TRUE(memory_test::WaitForPeak(memhog));
  meter_->Sample();
  EXPECT_NEAR(static_cast<double>(meter_->CurrentBytes(5)), 120.0 * kMiB, 12.0 * kMiB);
  meter_->Finish(memory_test::ReapMemhog(memhog, 5));
}

// A build's cgroups on v1 with prepared launches on, as a root build gets them by default.
class JobCgroupsPreparedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MemoryProbe probe(MemoryProbeOptions{});
    HEADROOM_REQUIRE_OR_SKIP(probe.layout().memory_version == CgroupVersion::kV1,
                             "needs a cgroup v1 memory controller (v2 jobs are born in their cgroup)");
    options_ = DefaultJobCgroupsOptions(probe.layout());
    // Not in the shared guard group: builds running beside the tests may have capped it with the OOM killer off,
    // and groups made below it inherit that switch (a test expecting a kernel OOM kill would wait instead).
    options_.shared_group_name.clear();
    EXPECT_EQ(options_.prepare_launches, PreparedLaunch::Supported());
    HEADROOM_REQUIRE_OR_SKIP(geteuid() == 0, "needs root");
    if (!PreparedLaunch::Supported()) GTEST_SKIP() << "prepared launches are off in sanitized builds (asserted above)";
  }

  std::unique_ptr<JobCgroups> Create(const std::string& name) {
    options_.build_name = fmt::format("{}-{}", name, getpid());
    std::string err;
    auto cgroups = JobCgroups::Create(options_, &err);
    EXPECT_NE(cgroups, nullptr) << err;
    return cgroups;
  }

  JobCgroupsOptions options_;
};

// On v1 each spare cgroup keeps a child that has joined it ahead of time (prepared_launch.h); a job given that cgroup
// is handed to it, and the cgroups go with their children at the end.
TEST_F(JobCgroupsPreparedTest, SparesKeepAPreparedChildThatTheNextJobIsHandedTo) {
  auto cgroups = Create("headroom-prepared-test");
  ASSERT_NE(cgroups, nullptr);
  std::string err;
  const std::string build_dir = cgroups->build_dir();
  auto runner = MakePosixProcessRunner();
  auto run = [&](int key) {
    JobStartOptions start;
    start.cgroup_dir = cgroups->CreateJob(key, &err);
    start.prepared = cgroups->PreparedLaunchFor(key);
    // A ready child is the job's only process (the cgroup's resident is no part of it); the job must run as it (not
    // fall back to a join).
    const bool ready = start.prepared && start.prepared->Poll(5'000) == PreparedLaunch::State::kReady;
    const std::vector<pid_t> job_pids = cgroups->Pids(key);
    const std::vector<pid_t> in_cgroup = CgroupPids(start.cgroup_dir);
    if (ready) {
      EXPECT_EQ(job_pids.size(), 1u);
      EXPECT_EQ(in_cgroup.size(), 2u) << "the waiting child and the resident that cloned it there";
    }
    JobId id = runner->Start("cat /proc/self/cgroup", start, &err);
    EXPECT_GE(id, 0) << err;
    if (ready && !job_pids.empty()) EXPECT_EQ(runner->PidOf(id), job_pids[0]);
    std::vector<JobExit> finished;
    while (finished.empty()) runner->Wait(-1, &finished);
    EXPECT_NE(finished[0].output.find(start.cgroup_dir.substr(start.cgroup_dir.rfind('/')) + "\n"), std::string::npos)
        << finished[0].output;
    EXPECT_TRUE(cgroups->Pids(key).empty());
    EXPECT_TRUE(cgroups->RemoveJob(key, &err)) << err << " (the resident stays: the cgroup is recycled)";
    return ready;
  };
  // The first job finds no spare and joins a fresh cgroup; one spare is made beside it, its child joining at once.
  EXPECT_FALSE(run(1));
  EXPECT_EQ(cgroups->spare_count(), 2u) << "the extra spare and the first job's own";
  EXPECT_TRUE(run(2)) << "the next job is handed to a waiting child";
  EXPECT_TRUE(run(3));
  cgroups.reset();
  EXPECT_FALSE(Exists(build_dir)) << "spares holding waiting children must go too";
}

// A cgroup's spawn resident is no part of the jobs it holds: KillAll, the job's process list and the recycling check
// all leave it out, so killing a job neither kills the resident nor keeps its cgroup from being recycled.
TEST_F(JobCgroupsPreparedTest, KillingAJobLeavesItsCgroupsResidentAndTheCgroupIsRecycled) {
  auto cgroups = Create("headroom-resident-kill-test");
  ASSERT_NE(cgroups, nullptr);
  std::string err;
  const std::string build_dir = cgroups->build_dir();
  auto runner = MakePosixProcessRunner();
  // Two jobs in turn: the first finds no spare and joins a fresh cgroup; the second is handed a spare's waiting
  // child, which that cgroup's resident cloned.
  for (int key = 1; key <= 2; ++key) {
    JobStartOptions start;
    start.cgroup_dir = cgroups->CreateJob(key, &err);
    start.prepared = cgroups->PreparedLaunchFor(key);
    JobId id = runner->Start("exec sleep 600", start, &err);
    ASSERT_GE(id, 0) << err;
    const pid_t job_pid = runner->PidOf(id);
    EXPECT_EQ(cgroups->Pids(key), std::vector<pid_t>{job_pid});
    const std::vector<pid_t> in_cgroup = CgroupPids(start.cgroup_dir);
    cgroups->KillAll(key);
    std::vector<JobExit> finished;
    while (finished.empty()) runner->Wait(-1, &finished);
    EXPECT_EQ(finished[0].term_signal, SIGKILL);
    const std::vector<pid_t> left = CgroupPids(start.cgroup_dir);
    if (key == 2) {
      ASSERT_EQ(in_cgroup.size(), 2u) << "the job and the resident that cloned it there";
      ASSERT_EQ(left.size(), 1u) << "the resident outlives the job it cloned";
    }
    EXPECT_TRUE(cgroups->Pids(key).empty());
    EXPECT_TRUE(cgroups->RemoveJob(key, &err)) << err << " (the resident does not keep it from being recycled)";
  }
  cgroups.reset();
  EXPECT_FALSE(Exists(build_dir)) << "the residents go with their cgroups";
}

TEST(JobMeterRealTest, DefaultMeterUsesCgroupsWhenRootAndCleansUp) {
  MemoryProbe probe(MemoryProbeOptions{});
  HEADROOM_REQUIRE_OR_SKIP(probe.layout().memory_version != CgroupVersion::kNone, "no cgroup memory controller");
  HEADROOM_REQUIRE_OR_SKIP(geteuid() == 0, "needs root");
  std::string build_dir;
  {
    JobMeter meter(probe.layout());
    ASSERT_TRUE(meter.uses_cgroups());
    std::string dir = meter.PrepareJob(1);
    ASSERT_FALSE(dir.empty());
    build_dir = dir.substr(0, dir.rfind('/'));
    memory_test::MemhogProcess memhog = memory_test::StartMemhog({"--mb", "50"}, dir);
    meter.JobStarted(1, memhog.pid);
    JobMemoryResult result = meter.Finish(memory_test::ReapMemhog(memhog, 1));
    EXPECT_EQ(result.peak_source, PeakSource::kCgroup);
    // The emptied cgroup is either removed or kept for the next job; the meter's end removes it.
  }
  EXPECT_FALSE(Exists(build_dir));
}

}  // namespace
}  // namespace headroom
