// Tests for the guard group the builds of one cgroup share (issue 29): one cap set by the first arming build, one
// kill at a time among them, the cap lifted by the last one out only, stale groups of dead builds swept, the v2
// move into a leaf and when it is refused; over fake trees, and over real v1 cgroups as root.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "headroom/memory/build_guard.h"
#include "headroom/memory/cgroup_tree.h"
#include "headroom/memory/job_cgroups.h"
#include "headroom/memory/job_meter.h"
#include "headroom/memory/memory_parsers.h"
#include "headroom/memory/memory_probe.h"
#include "memory_test_support.h"
#include "file_helpers.h"

namespace headroom {
namespace {

using test_files::Exists;

using memory_test::FakeRoot;

using memory_test::ReadText;

// A pid no process has: a child that has exited and been reaped.
pid_t DeadPid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status;
  waitpid(pid, &status, 0);
  return pid;
}

// --- Two builds in one v1 cgroup over a fake tree: build A is this process, build B its parent (both alive).

struct FakeSharedV1 {
  FakeRoot fake;
  std::string a_name = fmt::format("headroom-{}", getpid());
  std::string b_name = fmt::format("headroom-{}", getppid());
  FakeSharedV1() {
    fake.Write("mem/box/headroom.guard/memory.limit_in_bytes", "9223372036854771712\n");
    fake.Write("mem/box/headroom.guard/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n");
    fake.Write("mem/box/headroom.guard/" + a_name + "/job-1/cgroup.procs", "");
    fake.Write("mem/box/headroom.guard/" + b_name + "/job-1/cgroup.procs", "");
  }
  BuildGuardOptions Options(const std::string& name, uint64_t limit) {
    BuildGuardOptions options;
    options.version = CgroupVersion::kV1;
    options.group_dir = fake.Path("mem/box/headroom.guard");
    options.build_dir = fake.Path("mem/box/headroom.guard/" + name);
    options.limit_bytes = limit;
    options.start_watcher = false;
    return options;
  }
};

TEST(SharedGuardTest, TheFirstBuildCapsTheGroupAndLaterOnesKeepItsCap) {
  FakeSharedV1 box;
  std::string err;
  auto a = BuildGuard::Arm(box.Options(box.a_name, 300 * kMiB), &err);
  ASSERT_NE(a, nullptr) << err;
  EXPECT_TRUE(a->capped_group());
  EXPECT_EQ(ReadText(box.fake.Path("mem/box/headroom.guard/memory.limit_in_bytes")), std::to_string(300 * kMiB));
  EXPECT_EQ(ReadText(box.fake.Path("mem/box/headroom.guard/memory.oom_control")), "1");
  // One cap holds for both, so their sum can never pass the box's limit; B's smaller limit does not lower it.
  auto b = BuildGuard::Arm(box.Options(box.b_name, 200 * kMiB), &err);
  ASSERT_NE(b, nullptr) << err;
  EXPECT_FALSE(b->capped_group());
  EXPECT_EQ(b->limit_bytes(), 300 * kMiB);
  EXPECT_EQ(ReadText(box.fake.Path("mem/box/headroom.guard/memory.limit_in_bytes")), std::to_string(300 * kMiB));
  EXPECT_NE(b->Describe().find("300 MiB"), std::string::npos) << b->Describe();
}

// A first build's small --mem-budget must not bind a later build's larger one: the cap is raised, never lowered (each
// build's limit is below what was available when it began, so the larger one is still below the box's limit).
TEST(SharedGuardTest, ALaterBuildWithALargerLimitRaisesTheCap) {
  FakeSharedV1 box;
  std::string err;
  auto a = BuildGuard::Arm(box.Options(box.a_name, 300 * kMiB), &err);
  auto b = BuildGuard::Arm(box.Options(box.b_name, 500 * kMiB), &err);
  ASSERT_TRUE(a && b) << err;
  EXPECT_TRUE(b->capped_group());
  EXPECT_EQ(b->limit_bytes(), 500 * kMiB);
  EXPECT_EQ(ReadText(box.fake.Path("mem/box/headroom.guard/memory.limit_in_bytes")), std::to_string(500 * kMiB));
}

TEST(SharedGuardTest, OnlyTheLastBuildOutLiftsTheCap) {
  FakeSharedV1 box;
  std::string err;
  auto a = BuildGuard::Arm(box.Options(box.a_name, 300 * kMiB), &err);
  auto b = BuildGuard::Arm(box.Options(box.b_name, 300 * kMiB), &err);
  ASSERT_TRUE(a && b) << err;
  a->Release();  // B's group is still inside
  EXPECT_EQ(ReadText(box.fake.Path("mem/box/headroom.guard/memory.limit_in_bytes")), std::to_string(300 * kMiB));
  EXPECT_EQ(ReadText(box.fake.Path("mem/box/headroom.guard/memory.oom_control")), "1");
  box.fake.Remove("mem/box/headroom.guard/" + box.a_name);  // what A's JobCgroups does after releasing
  b->Release();
  EXPECT_EQ(ReadText(box.fake.Path("mem/box/headroom.guard/memory.limit_in_bytes")), "-1");
  EXPECT_EQ(ReadText(box.fake.Path("mem/box/headroom.guard/memory.oom_control")), "0");
}

TEST(SharedGuardTest, AGroupOfADeadBuildDoesNotKeepTheCapOn) {
  FakeSharedV1 box;
  box.fake.MakeDir(fmt::format("mem/box/headroom.guard/headroom-{}", DeadPid()));  // empty, as cgroupfs shows it
  std::string err;
  auto a = BuildGuard::Arm(box.Options(box.a_name, 300 * kMiB), &err);
  ASSERT_NE(a, nullptr) << err;
  box.fake.Remove("mem/box/headroom.guard/" + box.b_name);
  a->Release();
  EXPECT_EQ(ReadText(box.fake.Path("mem/box/headroom.guard/memory.limit_in_bytes")), "-1");
}

TEST(SharedGuardTest, OneKillTurnAtATimeAmongTheBuilds) {
  FakeSharedV1 box;
  std::string err;
  auto a = BuildGuard::Arm(box.Options(box.a_name, 300 * kMiB), &err);
  auto b = BuildGuard::Arm(box.Options(box.b_name, 300 * kMiB), &err);
  ASSERT_TRUE(a && b) << err;
  EXPECT_TRUE(a->TakeKillTurn());
  EXPECT_TRUE(a->TakeKillTurn()) << "a build keeps its own turn";
  EXPECT_FALSE(b->TakeKillTurn()) << "A's victim is still freeing its memory";
  a->EndKillTurn();
  EXPECT_TRUE(b->TakeKillTurn());
  EXPECT_FALSE(a->TakeKillTurn());
  b.reset();  // a build that goes away gives its turn up with it (the kernel drops the flock)
  EXPECT_TRUE(a->TakeKillTurn());
}

TEST(SharedGuardTest, ABuildAloneInItsGroupAlwaysHasTheTurn) {
  FakeSharedV1 box;
  BuildGuardOptions options = box.Options(box.a_name, 300 * kMiB);
  options.build_dir.clear();
  std::string err;
  auto alone = BuildGuard::Arm(options, &err);
  ASSERT_NE(alone, nullptr) << err;
  EXPECT_TRUE(alone->TakeKillTurn());
  auto other = BuildGuard::Arm(options, &err);
  EXPECT_TRUE(other->TakeKillTurn());
}

TEST(SharedGuardTest, V2JoinersKeepTheFirstBuildsMaxAndHigh) {
  FakeRoot fake;
  fake.Write("cg/headroom.guard/memory.max", "max\n");
  fake.Write("cg/headroom.guard/memory.high", "max\n");
  fake.Write("cg/headroom.guard/memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
  BuildGuardOptions options;
  options.version = CgroupVersion::kV2;
  options.group_dir = fake.Path("cg/headroom.guard");
  options.build_dir = fake.Path(fmt::format("cg/headroom.guard/headroom-{}", getpid()));
  options.limit_bytes = 1024 * kMiB;
  options.start_watcher = false;
  fake.MakeDir(fmt::format("cg/headroom.guard/headroom-{}", getpid()));
  std::string err;
  auto first = BuildGuard::Arm(options, &err);
  ASSERT_NE(first, nullptr) << err;
  EXPECT_EQ(ReadText(fake.Path("cg/headroom.guard/memory.high")), std::to_string(896 * kMiB));
  options.limit_bytes = 512 * kMiB;
  auto second = BuildGuard::Arm(options, &err);
  ASSERT_NE(second, nullptr) << err;
  EXPECT_FALSE(second->capped_group());
  EXPECT_EQ(second->limit_bytes(), 1024 * kMiB);
  EXPECT_EQ(second->high_bytes(), 896 * kMiB);
  EXPECT_EQ(ReadText(fake.Path("cg/headroom.guard/memory.max")), std::to_string(1024 * kMiB));
  options.limit_bytes = 2048 * kMiB;
  auto third = BuildGuard::Arm(options, &err);
  ASSERT_NE(third, nullptr) << err;
  EXPECT_TRUE(third->capped_group()) << "raised";
  EXPECT_EQ(ReadText(fake.Path("cg/headroom.guard/memory.max")), std::to_string(2048 * kMiB));
  EXPECT_EQ(ReadText(fake.Path("cg/headroom.guard/memory.high")), std::to_string(1792 * kMiB));
}

// The youngest job holding real memory pays, whichever build runs it: this process (started long ago) plays build
// A's job, a fresh child build B's. Ties broken by start time read from /proc, as across real builds.
TEST(SharedGuardTest, TheBuildRunningTheYoungestJobWithRealMemoryPays) {
  FakeSharedV1 box;
  pid_t young = fork();
  if (young == 0) {
    pause();
    _exit(0);
  }
  const std::string a_job = "mem/box/headroom.guard/" + box.a_name + "/job-1/";
  const std::string b_job = "mem/box/headroom.guard/" + box.b_name + "/job-1/";
  box.fake.Write(a_job + "cgroup.procs", fmt::format("{}\n", getpid()));
  box.fake.Write(a_job + "memory.usage_in_bytes", std::to_string(100 * kMiB));
  box.fake.Write(b_job + "cgroup.procs", fmt::format("{}\n", young));
  box.fake.Write(b_job + "memory.usage_in_bytes", std::to_string(100 * kMiB));
  std::string err;
  auto a = BuildGuard::Arm(box.Options(box.a_name, 300 * kMiB), &err);
  auto b = BuildGuard::Arm(box.Options(box.b_name, 300 * kMiB), &err);
  ASSERT_TRUE(a && b) << err;
  box.fake.Write("mem/box/headroom.guard/memory.oom_control", "oom_kill_disable 1\nunder_oom 1\noom_kill 0\n");
  ASSERT_TRUE(a->Check(1000).stalled);
  ASSERT_TRUE(b->Check(1000).stalled);
  // B's job started after this process, so it may not be older even when both started within one clock tick.
  EXPECT_TRUE(a->AnotherBuildShouldPay(10 * kMiB, 1000)) << "B's job is the youngest";
  EXPECT_FALSE(b->AnotherBuildShouldPay(10 * kMiB, 1000));
  // A job holding almost nothing does not count: killing it would free nothing.
  box.fake.Write(b_job + "memory.usage_in_bytes", std::to_string(1 * kMiB));
  EXPECT_FALSE(a->AnotherBuildShouldPay(10 * kMiB, 1000));
  EXPECT_TRUE(b->AnotherBuildShouldPay(10 * kMiB, 1000));
  // A stall nobody resolved for kMaxDeferMs: B (perhaps stopped) is no longer waited for.
  box.fake.Write(b_job + "memory.usage_in_bytes", std::to_string(100 * kMiB));
  EXPECT_TRUE(a->AnotherBuildShouldPay(10 * kMiB, 1000 + BuildGuard::kMaxDeferMs - 1));
  a->Check(1000 + BuildGuard::kMaxDeferMs);
  EXPECT_FALSE(a->AnotherBuildShouldPay(10 * kMiB, 1000 + BuildGuard::kMaxDeferMs));
  kill(young, SIGKILL);
  waitpid(young, nullptr, 0);
}

// --- Groups left behind, and names.

TEST(CgroupTreeTest, BuildGroupNamesCarryThePid) {
  EXPECT_EQ(BuildGroupPid("headroom-123"), 123);
  EXPECT_EQ(BuildGroupPid("headroom-test-1-2"), std::nullopt);
  EXPECT_EQ(BuildGroupPid("headroom-"), std::nullopt);
  EXPECT_EQ(BuildGroupPid("headroom.guard"), std::nullopt);
  EXPECT_EQ(BuildGroupPid("job-3"), std::nullopt);
}

TEST(CgroupTreeTest, SweepRemovesOnlyEmptyGroupsOfDeadBuilds) {
  FakeRoot fake;
  const pid_t dead = DeadPid();
  fake.MakeDir(fmt::format("cg/headroom-{}/job-1", dead));                   // dead and empty: goes
  fake.MakeDir(fmt::format("cg/headroom-{}/job-1", getpid()));               // alive: stays
  fake.Write(fmt::format("cg/headroom-{}/job-2/cgroup.procs", DeadPid()), "4242\n");  // orphans still run: stays
  fake.MakeDir("cg/unrelated");
  EXPECT_EQ(SweepStaleBuildGroups(fake.Path("cg")), 1);
  EXPECT_FALSE(Exists(fake.Path(fmt::format("cg/headroom-{}", dead))));
  EXPECT_TRUE(Exists(fake.Path(fmt::format("cg/headroom-{}", getpid()))));
  EXPECT_TRUE(Exists(fake.Path("cg/unrelated")));
}

// --- v2: when headroom may move other processes into a leaf.

bool Delegated(const std::string&) { return true; }
bool NotDelegated(const std::string&) { return false; }

TEST(V2LeafTest, AContainersRootOrAPlainGroupMayBeRearranged) {
  FakeRoot fake;
  fake.Write("cg/cgroup.type", "domain\n");
  fake.Write("cg/cgroup.procs", "1\n");
  fake.Write("cg/cgroup.subtree_control", "");
  std::string why;
  EXPECT_TRUE(MayRearrangeV2(fake.Path("cg"), NotDelegated, &why)) << why;
}

TEST(V2LeafTest, ASystemdUnitOnlyWhenDelegated) {
  FakeRoot fake;
  for (const char* unit : {"session-3.scope", "build.service", "user.slice"}) {
    const std::string dir = std::string("user.slice/") + unit;
    fake.Write(dir + "/cgroup.type", "domain\n");
    fake.Write(dir + "/cgroup.procs", "");
    fake.Write(dir + "/cgroup.subtree_control", "");
    std::string why;
    EXPECT_FALSE(MayRearrangeV2(fake.Path(dir), NotDelegated, &why)) << unit;
    EXPECT_NE(why.find("systemd-run"), std::string::npos) << why;
    EXPECT_NE(why.find("Delegate=yes"), std::string::npos) << why;
    EXPECT_TRUE(MayRearrangeV2(fake.Path(dir), Delegated, &why)) << why;
  }
}

TEST(V2LeafTest, NeverAThreadedGroup) {
  FakeRoot fake;
  for (const char* type : {"threaded\n", "domain threaded\n", "domain invalid\n"}) {
    fake.Write("cg/cgroup.type", type);
    fake.Write("cg/cgroup.procs", "");
    fake.Write("cg/cgroup.subtree_control", "");
    std::string why;
    EXPECT_FALSE(MayRearrangeV2(fake.Path("cg"), Delegated, &why)) << type;
    EXPECT_NE(why.find("threaded"), std::string::npos) << why;
  }
}

TEST(V2LeafTest, NeverAGroupThisUserMayNotWrite) {
  FakeRoot fake;
  fake.Write("cg/cgroup.type", "domain\n");  // no cgroup.procs or subtree_control to write
  std::string why;
  EXPECT_FALSE(MayRearrangeV2(fake.Path("cg"), Delegated, &why));
  EXPECT_NE(why.find("not this user's"), std::string::npos) << why;
}

// A build started from a leaf another build made puts its groups beside the leaf, in the shared group there.
TEST(V2LeafTest, ABuildInsideALeafSharesTheGroupBesideIt) {
  FakeRoot fake;
  fake.Write("cg/cgroup.subtree_control", "memory\n");
  fake.Write("cg/headroom.leaf/cgroup.subtree_control", "");
  JobCgroupsOptions options;
  options.version = CgroupVersion::kV2;
  options.parent_dir = fake.Path("cg/headroom.leaf");
  options.build_name = "hr";
  options.shared_group_name = "headroom.guard";
  fake.Write("cg/headroom.guard/cgroup.subtree_control", "");
  fake.Write("cg/headroom.guard/hr/cgroup.subtree_control", "");
  std::string err;
  auto cgroups = JobCgroups::Create(options, &err);
  ASSERT_NE(cgroups, nullptr) << err;
  EXPECT_EQ(cgroups->guard_dir(), fake.Path("cg/headroom.guard"));
  EXPECT_EQ(cgroups->build_dir(), fake.Path("cg/headroom.guard/hr"));
  EXPECT_EQ(cgroups->EvacuationDir(), fake.Path("cg/headroom.leaf"));
  EXPECT_FALSE(cgroups->moved_to_leaf());
  EXPECT_EQ(ReadText(fake.Path("cg/headroom.guard/cgroup.subtree_control")), "+memory");
}

TEST(SharedLayoutTest, V1BuildGroupsGoInsideTheSharedGroup) {
  FakeRoot fake;
  fake.MakeDir("memory/box");
  fake.MakeDir(fmt::format("memory/box/headroom-{}", DeadPid()));  // a SIGKILLed build's, from before the shared group
  JobCgroupsOptions options;
  options.version = CgroupVersion::kV1;
  options.parent_dir = fake.Path("memory/box");
  options.build_name = "hr";
  options.shared_group_name = "headroom.guard";
  options.prepare_launches = false;
  std::string err;
  auto cgroups = JobCgroups::Create(options, &err);
  ASSERT_NE(cgroups, nullptr) << err;
  EXPECT_EQ(cgroups->guard_dir(), fake.Path("memory/box/headroom.guard"));
  EXPECT_EQ(cgroups->build_dir(), fake.Path("memory/box/headroom.guard/hr"));
  EXPECT_EQ(cgroups->EvacuationDir(), fake.Path("memory/box"));
  EXPECT_EQ(CgroupChildren(fake.Path("memory/box")), std::vector<std::string>{fake.Path("memory/box/headroom.guard")})
      << "the dead build's group was swept";
  cgroups.reset();
  EXPECT_FALSE(Exists(fake.Path("memory/box/headroom.guard"))) << "the last build out removes the shared group";
}

// --- Part 4: no cgroup access is no surprise.

TEST(NoCgroupAccessTest, NoWarningButTheNoGuardReasonSaysWhatFixesIt) {
  FakeRoot fake;
  CgroupLayout layout;
  layout.memory_version = CgroupVersion::kV1;
  layout.memory_dir = fake.Path("missing/memory/box");
  JobMeter meter(layout, memory_test::FakeMeterOptions(fake, true));
  EXPECT_FALSE(meter.uses_cgroups());
  EXPECT_TRUE(meter.TakeWarnings().empty());
  std::string why_not;
  EXPECT_EQ(meter.ArmGuard(300 * kMiB, &why_not), nullptr);
  EXPECT_NE(why_not.find("cannot create cgroup"), std::string::npos) << why_not;
  EXPECT_NE(why_not.find("to get one"), std::string::npos) << why_not;
  EXPECT_NE(CgroupAccessFix(CgroupVersion::kV2, "Permission denied").find("Delegate=yes"), std::string::npos);
  EXPECT_EQ(CgroupAccessFix(CgroupVersion::kNone, ""), "");
}

// --- Real cgroup v1 (root): two builds in one box cgroup.

class RealSharedGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MemoryProbe probe(MemoryProbeOptions{});
    layout_ = probe.layout();
    HEADROOM_REQUIRE_OR_SKIP(layout_.memory_version == CgroupVersion::kV1,
                             "needs a cgroup v1 memory controller (v2 runs in the VM lane)");
    HEADROOM_REQUIRE_OR_SKIP(geteuid() == 0, "needs root");
    box_ = fmt::format("{}/hr-shared-test-{}", layout_.memory_dir, getpid());
    ASSERT_EQ(mkdir(box_.c_str(), 0755), 0) << box_;
  }
  void TearDown() override {
    guards_.clear();
    builds_.clear();
    for (pid_t pid : CgroupTreePids(box_)) kill(pid, SIGKILL);
    for (pid_t pid : children_) waitpid(pid, nullptr, 0);
    RemoveCgroupTree(box_);
  }
  // A build's groups in the box, named as build `n`'s (this process plays every build).
  JobCgroups* AddBuild(int n) {
    JobCgroupsOptions options = DefaultJobCgroupsOptions(layout_);
    options.parent_dir = box_;
    options.v1_freezer_parent_dir.clear();
    options.build_name = fmt::format("headroom-{}", n == 0 ? getpid() : getppid());
    options.prepare_launches = false;
    options.recycle_max_leftover_bytes = 0;
    std::string err;
    builds_.push_back(JobCgroups::Create(options, &err));
    EXPECT_NE(builds_.back(), nullptr) << err;
    return builds_.back().get();
  }
  BuildGuard* Arm(JobCgroups* build, uint64_t limit) {
    BuildGuardOptions options;
    options.version = CgroupVersion::kV1;
    options.group_dir = build->guard_dir();
    options.build_dir = build->build_dir();
    options.evacuate_dir = build->EvacuationDir();
    options.limit_bytes = limit;
    std::string err;
    guards_.push_back(BuildGuard::Arm(options, &err));
    EXPECT_NE(guards_.back(), nullptr) << err;
    return guards_.back().get();
  }
  pid_t StartSleeper(const std::string& cgroup) {
    pid_t pid = fork();
    if (pid == 0) {
      int fd = open((cgroup + "/cgroup.procs").c_str(), O_WRONLY);
      if (fd < 0 || write(fd, "0", 1) != 1) _exit(126);
      close(fd);
      execlp("sleep", "sleep", "60", static_cast<char*>(nullptr));
      _exit(127);
    }
    children_.push_back(pid);
    // Polls the kernel's placement (not a sleep): the child has joined once the group lists it.
    while (CgroupPids(cgroup) != std::vector<pid_t>{pid}) usleep(1000);
    return pid;
  }
  uint64_t Limit(const std::string& dir) {
    return ParseSingleNumber(ReadText(dir + "/memory.limit_in_bytes")).value_or(0);
  }

  CgroupLayout layout_;
  std::string box_;
  std::vector<std::unique_ptr<JobCgroups>> builds_;
  std::vector<std::unique_ptr<BuildGuard>> guards_;
  std::vector<pid_t> children_;
};

TEST_F(RealSharedGuardTest, TwoBuildsShareOneCapAndTheLastOutRemovesIt) {
  JobCgroups* a = AddBuild(0);
  JobCgroups* b = AddBuild(1);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->guard_dir(), b->guard_dir());
  const std::string shared = a->guard_dir();
  BuildGuard* guard_a = Arm(a, 200 * kMiB);
  BuildGuard* guard_b = Arm(b, 100 * kMiB);  // smaller: keeps A's cap
  ASSERT_TRUE(guard_a && guard_b);
  EXPECT_EQ(Limit(shared), 200 * kMiB);
  EXPECT_EQ(guard_b->limit_bytes(), 200 * kMiB);
  guard_a->Release();
  builds_[0].reset();
  EXPECT_EQ(Limit(shared), 200 * kMiB) << "B still builds under the cap";
  EXPECT_TRUE(Exists(shared));
  guard_b->Release();
  builds_[1].reset();
  EXPECT_FALSE(Exists(shared));
}

// headroom SIGKILLed in a shared group: its watcher moves the orphans out (the others' cap stays on, and nobody
// would end a stall for them there) and removes the build's groups; the others go on under the cap.
TEST_F(RealSharedGuardTest, TheWatcherMovesADeadBuildsOrphansOutOfTheSharedGroup) {
  JobCgroups* a = AddBuild(0);
  JobCgroups* b = AddBuild(1);
  ASSERT_TRUE(a && b);
  BuildGuard* guard_a = Arm(a, 200 * kMiB);
  ASSERT_TRUE(guard_a && Arm(b, 200 * kMiB));
  std::string err;
  const std::string job = a->CreateJob(1, &err);
  ASSERT_FALSE(job.empty()) << err;
  const pid_t orphan = StartSleeper(job);
  guard_a->AbandonWatcherForTest();  // returns once the watcher has done its work and exited
  std::vector<pid_t> in_box = CgroupPids(box_);
  EXPECT_NE(std::find(in_box.begin(), in_box.end(), orphan), in_box.end()) << "the orphan runs on in the box";
  EXPECT_FALSE(Exists(a->build_dir()));
  EXPECT_EQ(Limit(a->guard_dir()), 200 * kMiB) << "B's cap stays";
  EXPECT_EQ(ParseKeyedValue(ReadText(a->guard_dir() + "/memory.oom_control"), "oom_kill_disable"), 1u);
}

// A daemon a job started outlives it; at the build's end it moves to the own cgroup and no group stays behind.
TEST_F(RealSharedGuardTest, StraysMoveToTheOwnCgroupWhenTheBuildEnds) {
  JobCgroups* a = AddBuild(0);
  ASSERT_TRUE(a);
  std::string err;
  const std::string job = a->CreateJob(1, &err);
  const pid_t daemon = StartSleeper(job);
  EXPECT_FALSE(a->RemoveJob(1, &err));
  const std::string shared = a->guard_dir();
  builds_.clear();
  std::vector<pid_t> in_box = CgroupPids(box_);
  EXPECT_NE(std::find(in_box.begin(), in_box.end(), daemon), in_box.end());
  EXPECT_FALSE(Exists(shared));
}

// An outer build's KillAll of a job in which another headroom runs reaches that build's jobs (v1 has no cgroup.kill).
TEST_F(RealSharedGuardTest, KillAllReachesTheGroupsOfANestedBuild) {
  JobCgroups* outer = AddBuild(0);
  ASSERT_TRUE(outer);
  std::string err;
  const std::string job = outer->CreateJob(1, &err);
  const std::string inner_job = job + "/headroom.guard/headroom-1/job-1";
  ASSERT_TRUE(std::filesystem::create_directories(inner_job));
  const pid_t inner = StartSleeper(inner_job);
  outer->KillAll(1);
  int status = 0;
  ASSERT_EQ(waitpid(inner, &status, 0), inner);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  std::erase(children_, inner);
  EXPECT_TRUE(outer->RemoveJob(1, &err)) << err;
  EXPECT_FALSE(Exists(job)) << "the nested groups went with the job's";
}

}  // namespace
}  // namespace headroom
