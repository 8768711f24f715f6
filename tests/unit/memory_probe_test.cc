// Tests for MemoryProbe and PressureWindow over fake /proc and /sys trees: v1, v2, hybrid, cgroup
// namespaces, ancestors' limits, memory.high, missing and malformed files, and the PSI window.
#include "headroom/memory/memory_probe.h"
#include "headroom/util/byte_size.h"

#include <chrono>
#include <cstdio>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "headroom/memory/pressure_window.h"
#include "memory_test_support.h"

namespace headroom {
namespace {

using memory_test::FakeRoot;

constexpr const char* kPsiQuiet = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
                                  "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
constexpr const char* kV1NoLimit = "9223372036854771712\n";

std::string Meminfo(uint64_t total, uint64_t available) {
  return fmt::format("MemTotal: {} kB\nMemFree: 1 kB\nMemAvailable: {} kB\n", total / 1024, available / 1024);
}

// A machine with 16 GiB, 12 GiB available, quiet PSI.
void WriteMachine(const FakeRoot& fake) {
  fake.Write("proc/meminfo", Meminfo(16 * kGiB, 12 * kGiB));
  fake.Write("proc/pressure/memory", kPsiQuiet);
}

// A pure v2 host: cgroup2 at /sys/fs/cgroup, this process in /build.slice/job.
void WriteV2(const FakeRoot& fake) {
  WriteMachine(fake);
  fake.Write("proc/self/cgroup", "0::/build.slice/job\n");
  fake.Write("proc/self/mountinfo", "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
  fake.Write("sys/fs/cgroup/cgroup.controllers", "cpu io memory pids\n");
  for (const char* dir : {"sys/fs/cgroup/build.slice", "sys/fs/cgroup/build.slice/job"}) {
    std::string d = dir;
    fake.Write(d + "/cgroup.controllers", "memory pids\n");
    fake.Write(d + "/memory.max", "max\n");
    fake.Write(d + "/memory.high", "max\n");
    fake.Write(d + "/memory.current", std::to_string(100 * kMiB));
    fake.Write(d + "/memory.stat", "anon 1\ninactive_file 0\n");
    fake.Write(d + "/memory.pressure", kPsiQuiet);
  }
}

// A v1 host: memory controller at /sys/fs/cgroup/memory, this process in /ci/box.
void WriteV1(const FakeRoot& fake, bool with_unified_tree) {
  WriteMachine(fake);
  std::string self_cgroup = "4:memory:/ci/box\n6:freezer:/\n";
  std::string mountinfo =
      "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
      "37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n";
  if (with_unified_tree) {
    self_cgroup += "0::/\n";
    mountinfo += "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
    fake.Write("sys/fs/cgroup/unified/cgroup.controllers", "\n");  // memory belongs to v1
    fake.Write("sys/fs/cgroup/unified/memory.pressure", kPsiQuiet);
  }
  fake.Write("proc/self/cgroup", self_cgroup);
  fake.Write("proc/self/mountinfo", mountinfo);
  fake.MakeDir("sys/fs/cgroup/freezer");
  for (const char* dir : {"sys/fs/cgroup/memory", "sys/fs/cgroup/memory/ci", "sys/fs/cgroup/memory/ci/box"}) {
    std::string d = dir;
    fake.Write(d + "/memory.limit_in_bytes", kV1NoLimit);
    fake.Write(d + "/memory.usage_in_bytes", std::to_string(500 * kMiB));
    fake.Write(d + "/memory.stat", "inactive_file 1\ntotal_inactive_file " + std::to_string(100 * kMiB) + "\n");
  }
}

MemoryProbe MakeProbe(const FakeRoot& fake) {
  MemoryProbeOptions options;
  options.root = fake.root();
  return MemoryProbe(options);
}

TEST(MemoryProbeTest, V2LimitOnOwnCgroupBoundsTheBudget) {
  FakeRoot fake;
  WriteV2(fake);
  fake.Write("sys/fs/cgroup/build.slice/job/memory.max", std::to_string(4 * kGiB));
  fake.Write("sys/fs/cgroup/build.slice/job/memory.current", std::to_string(1 * kGiB));
  fake.Write("sys/fs/cgroup/build.slice/job/memory.stat", "anon 5\ninactive_file " + std::to_string(256 * kMiB));
  MemoryProbe probe = MakeProbe(fake);
  EXPECT_EQ(probe.layout().memory_version, CgroupVersion::kV2);
  EXPECT_EQ(probe.layout().memory_dir, fake.Path("sys/fs/cgroup/build.slice/job"));
  MemoryReading reading = probe.Read(1000);
  EXPECT_EQ(reading.taken_at_ms, 1000);
  EXPECT_TRUE(reading.from_cgroup);
  EXPECT_EQ(reading.limit_bytes, 4 * kGiB);
  EXPECT_EQ(reading.cgroup_max_bytes, 4 * kGiB);
  EXPECT_EQ(reading.cgroup_high_bytes, 0u);
  // Inactive file pages are reclaimable: only 768 MiB of the 1 GiB counts as used.
  EXPECT_EQ(reading.cgroup_usage_bytes, 768 * kMiB);
  EXPECT_EQ(reading.available_bytes, 4 * kGiB - 768 * kMiB);
  EXPECT_EQ(reading.used_bytes, 768 * kMiB);
  EXPECT_TRUE(probe.TakeWarnings().empty());
}

TEST(MemoryProbeTest, NoLimitAnywhereUsesTheMachine) {
  FakeRoot fake;
  WriteV1(fake, /*with_unified_tree=*/false);
  MemoryProbe probe = MakeProbe(fake);
  EXPECT_EQ(probe.layout().memory_version, CgroupVersion::kV1);
  MemoryReading reading = probe.Read(0);
  EXPECT_FALSE(reading.from_cgroup);
  EXPECT_EQ(reading.limit_bytes, 16 * kGiB);
  EXPECT_EQ(reading.available_bytes, 12 * kGiB);
  EXPECT_EQ(reading.used_bytes, 4 * kGiB);
  EXPECT_EQ(reading.cgroup_max_bytes, 0u);
  EXPECT_TRUE(probe.TakeWarnings().empty());
}

TEST(MemoryProbeTest, V1LimitSubtractsTotalInactiveFile) {
  FakeRoot fake;
  WriteV1(fake, false);
  fake.Write("sys/fs/cgroup/memory/ci/box/memory.limit_in_bytes", std::to_string(2 * kGiB));
  MemoryReading reading = MakeProbe(fake).Read(0);
  EXPECT_TRUE(reading.from_cgroup);
  EXPECT_EQ(reading.limit_bytes, 2 * kGiB);
  // usage 500 MiB - total_inactive_file 100 MiB (not the non-hierarchical inactive_file).
  EXPECT_EQ(reading.cgroup_usage_bytes, 400 * kMiB);
  EXPECT_EQ(reading.available_bytes, 2 * kGiB - 400 * kMiB);
}

TEST(MemoryProbeTest, HybridUsesV1MemoryAndUnifiedPressure) {
  FakeRoot fake;
  WriteV1(fake, /*with_unified_tree=*/true);
  fake.Write("sys/fs/cgroup/memory/ci/box/memory.limit_in_bytes", std::to_string(3 * kGiB));
  // Not the machine's root cgroup (that one has no cgroup.type): its PSI is this process's own.
  fake.Write("sys/fs/cgroup/unified/cgroup.type", "domain\n");
  fake.Write("sys/fs/cgroup/unified/memory.pressure",
             "some avg10=7.00 avg60=0.00 avg300=0.00 total=10\nfull avg10=2.00 avg60=0.00 avg300=0.00 total=5\n");
  MemoryProbe probe = MakeProbe(fake);
  EXPECT_EQ(probe.layout().memory_version, CgroupVersion::kV1);
  EXPECT_EQ(probe.layout().v2_dir, fake.Path("sys/fs/cgroup/unified"));
  EXPECT_EQ(probe.layout().v1_freezer_dir, fake.Path("sys/fs/cgroup/freezer"));
  MemoryReading reading = probe.Read(0);
  EXPECT_EQ(reading.limit_bytes, 3 * kGiB);
  EXPECT_TRUE(reading.pressure_known);
  EXPECT_DOUBLE_EQ(reading.pressure_some_pct, 7.0);  // first read: the kernel's avg10
  EXPECT_DOUBLE_EQ(reading.pressure_full_pct, 2.0);
  EXPECT_TRUE(probe.TakeWarnings().empty());
}

TEST(MemoryProbeTest, ContainerWithCgroupNamespaceMapsSlashToTheMountPoint) {
  FakeRoot fake;
  WriteMachine(fake);
  // Inside the namespace the own cgroup is "/", while mountinfo names the host-side cgroup as root.
  fake.Write("proc/self/cgroup", "0::/\n");
  fake.Write("proc/self/mountinfo", "600 500 0:26 /docker/abc123 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
  fake.Write("sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
  fake.Write("sys/fs/cgroup/memory.max", std::to_string(2 * kGiB));
  fake.Write("sys/fs/cgroup/memory.high", "max\n");
  fake.Write("sys/fs/cgroup/memory.current", std::to_string(512 * kMiB));
  fake.Write("sys/fs/cgroup/memory.stat", "inactive_file 0\n");
  MemoryProbe probe = MakeProbe(fake);
  EXPECT_EQ(probe.layout().memory_version, CgroupVersion::kV2);
  EXPECT_EQ(probe.layout().memory_dir, fake.Path("sys/fs/cgroup"));
  MemoryReading reading = probe.Read(0);
  EXPECT_EQ(reading.limit_bytes, 2 * kGiB);
  EXPECT_EQ(reading.available_bytes, 1536 * kMiB);
}

TEST(MemoryProbeTest, HostNamespaceBindMountStripsTheMountRoot) {
  FakeRoot fake;
  WriteMachine(fake);
  // Without a namespace the full path shows, and the mount root is its prefix.
  fake.Write("proc/self/cgroup", "4:memory:/docker/abc123/sub\n");
  fake.Write("proc/self/mountinfo", "600 500 0:26 /docker/abc123 /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n");
  fake.Write("sys/fs/cgroup/memory/memory.limit_in_bytes", std::to_string(1 * kGiB));
  fake.Write("sys/fs/cgroup/memory/memory.usage_in_bytes", "0\n");
  fake.Write("sys/fs/cgroup/memory/memory.stat", "total_inactive_file 0\n");
  fake.Write("sys/fs/cgroup/memory/sub/memory.limit_in_bytes", kV1NoLimit);
  fake.Write("sys/fs/cgroup/memory/sub/memory.usage_in_bytes", "0\n");
  fake.Write("sys/fs/cgroup/memory/sub/memory.stat", "total_inactive_file 0\n");
  MemoryProbe probe = MakeProbe(fake);
  EXPECT_EQ(probe.layout().memory_dir, fake.Path("sys/fs/cgroup/memory/sub"));
  EXPECT_EQ(probe.layout().memory_mount_point, fake.Path("sys/fs/cgroup/memory"));
  EXPECT_EQ(probe.Read(0).limit_bytes, 1 * kGiB);  // the limit sits on the mount point itself
}

TEST(MemoryProbeTest, LimitOnAncestorCountsTheAncestorsUsage) {
  FakeRoot fake;
  WriteV2(fake);
  // The slice is limited to 3 GiB and its other members already use 2 GiB of it.
  fake.Write("sys/fs/cgroup/build.slice/memory.max", std::to_string(3 * kGiB));
  fake.Write("sys/fs/cgroup/build.slice/memory.current", std::to_string(2 * kGiB));
  MemoryReading reading = MakeProbe(fake).Read(0);
  EXPECT_TRUE(reading.from_cgroup);
  EXPECT_EQ(reading.limit_bytes, 3 * kGiB);
  EXPECT_EQ(reading.available_bytes, 1 * kGiB);
  EXPECT_EQ(reading.cgroup_usage_bytes, 2 * kGiB);
}

TEST(MemoryProbeTest, MemoryHighTighterThanMaxSetsTheBudget) {
  FakeRoot fake;
  WriteV2(fake);
  fake.Write("sys/fs/cgroup/build.slice/job/memory.max", std::to_string(8 * kGiB));
  fake.Write("sys/fs/cgroup/build.slice/job/memory.high", std::to_string(6 * kGiB));
  MemoryReading reading = MakeProbe(fake).Read(0);
  EXPECT_EQ(reading.cgroup_max_bytes, 8 * kGiB);
  EXPECT_EQ(reading.cgroup_high_bytes, 6 * kGiB);
  EXPECT_EQ(reading.limit_bytes, 6 * kGiB);
  EXPECT_EQ(reading.available_bytes, 6 * kGiB - 100 * kMiB);
}

TEST(MemoryProbeTest, MachineTighterThanCgroupIsNotFromCgroup) {
  FakeRoot fake;
  WriteV2(fake);
  fake.Write("sys/fs/cgroup/build.slice/job/memory.max", std::to_string(64 * kGiB));
  MemoryReading reading = MakeProbe(fake).Read(0);
  EXPECT_FALSE(reading.from_cgroup);
  EXPECT_EQ(reading.limit_bytes, 16 * kGiB);
  EXPECT_EQ(reading.available_bytes, 12 * kGiB);
}

// The cgroup that binds the build's memory is what other builds must live under for their reservations to count
// here (BuildLedger): the ancestor whose headroom is the least, or the machine when MemAvailable is less.
TEST(MemoryProbeTest, BindingCgroupIsTheLevelWithTheLeastHeadroom) {
  FakeRoot fake;
  WriteV2(fake);
  MemoryProbe unlimited = MakeProbe(fake);
  unlimited.Read(0);
  EXPECT_EQ(unlimited.BindingCgroup(), "");  // no limit anywhere: the machine binds

  fake.Write("sys/fs/cgroup/build.slice/memory.max", std::to_string(3 * kGiB));
  fake.Write("sys/fs/cgroup/build.slice/memory.current", std::to_string(2 * kGiB));
  fake.Write("sys/fs/cgroup/build.slice/job/memory.max", std::to_string(4 * kGiB));
  MemoryProbe probe = MakeProbe(fake);
  probe.Read(0);
  EXPECT_EQ(probe.BindingCgroup(), "/build.slice");  // 1 GiB left there, 3.9 GiB in the job's own

  fake.Write("sys/fs/cgroup/build.slice/memory.current", std::to_string(100 * kMiB));
  fake.Write("sys/fs/cgroup/build.slice/job/memory.max", std::to_string(1 * kGiB));
  probe.Read(1000);
  EXPECT_EQ(probe.BindingCgroup(), "/build.slice/job");

  fake.Write("proc/meminfo", Meminfo(16 * kGiB, 512 * kMiB));  // the machine has less than either
  probe.Read(2000);
  EXPECT_EQ(probe.BindingCgroup(), "");
}

TEST(CgroupPathTest, PathsInTheHierarchyAndWhatContainsWhat) {
  EXPECT_EQ(CgroupPathInHierarchy("/sys/fs/cgroup/memory/box/sub", "/sys/fs/cgroup/memory"), "/box/sub");
  EXPECT_EQ(CgroupPathInHierarchy("/sys/fs/cgroup/memory", "/sys/fs/cgroup/memory"), "/");
  EXPECT_EQ(CgroupPathInHierarchy("/sys/fs/cgroup/box/", "/sys/fs/cgroup/"), "/box");
  EXPECT_EQ(CgroupPathInHierarchy("/sys/fs/cgroup/memoryx/box", "/sys/fs/cgroup/memory"), "");
  EXPECT_EQ(CgroupPathInHierarchy("/elsewhere", "/sys/fs/cgroup"), "");
  EXPECT_TRUE(CgroupPathWithin("/box/sub", "/box"));
  EXPECT_TRUE(CgroupPathWithin("/box", "/box"));
  EXPECT_TRUE(CgroupPathWithin("/anything", "/"));
  EXPECT_FALSE(CgroupPathWithin("/boxer", "/box"));
  EXPECT_FALSE(CgroupPathWithin("/box", "/box/sub"));
  EXPECT_FALSE(CgroupPathWithin("", "/box"));  // a build that did not say where it lives counts only where the machine binds
}

TEST(MemoryProbeTest, MalformedLimitWarnsOnceAndCountsAsUnlimited) {
  FakeRoot fake;
  WriteV2(fake);
  fake.Write("sys/fs/cgroup/build.slice/memory.max", "lots\n");
  fake.Write("sys/fs/cgroup/build.slice/job/memory.max", std::to_string(5 * kGiB));
  MemoryProbe probe = MakeProbe(fake);
  EXPECT_EQ(probe.Read(0).limit_bytes, 5 * kGiB);
  EXPECT_EQ(probe.Read(500).limit_bytes, 5 * kGiB);
  std::vector<std::string> warnings = probe.TakeWarnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("build.slice/memory.max"), std::string::npos) << warnings[0];
}

TEST(MemoryProbeTest, MissingMeminfoFallsBackToTheCgroup) {
  FakeRoot fake;
  WriteV2(fake);
  fake.Remove("proc/meminfo");
  fake.Write("sys/fs/cgroup/build.slice/job/memory.max", std::to_string(2 * kGiB));
  MemoryProbe probe = MakeProbe(fake);
  MemoryReading reading = probe.Read(0);
  EXPECT_EQ(reading.limit_bytes, 2 * kGiB);
  EXPECT_EQ(reading.available_bytes, 2 * kGiB - 100 * kMiB);
  EXPECT_EQ(reading.mem_total_bytes, 0u);
  EXPECT_EQ(probe.TakeWarnings().size(), 1u);
  probe.Read(100);
  EXPECT_TRUE(probe.TakeWarnings().empty());  // once per problem, not once per read
}

TEST(MemoryProbeTest, MissingMemoryStatCountsAllUsage) {
  FakeRoot fake;
  WriteV1(fake, false);
  fake.Write("sys/fs/cgroup/memory/ci/box/memory.limit_in_bytes", std::to_string(1 * kGiB));
  fake.Remove("sys/fs/cgroup/memory/ci/box/memory.stat");
  MemoryProbe probe = MakeProbe(fake);
  EXPECT_EQ(probe.Read(0).available_bytes, 1 * kGiB - 500 * kMiB);
  EXPECT_EQ(probe.TakeWarnings().size(), 1u);
}

TEST(MemoryProbeTest, MissingUsageFallsBackToMemAvailable) {
  FakeRoot fake;
  WriteV1(fake, false);
  fake.Write("sys/fs/cgroup/memory/ci/box/memory.limit_in_bytes", std::to_string(14 * kGiB));
  fake.Remove("sys/fs/cgroup/memory/ci/box/memory.usage_in_bytes");
  MemoryProbe probe = MakeProbe(fake);
  MemoryReading reading = probe.Read(0);
  EXPECT_EQ(reading.limit_bytes, 14 * kGiB);
  EXPECT_EQ(reading.available_bytes, 12 * kGiB);
  EXPECT_EQ(probe.TakeWarnings().size(), 1u);
}

TEST(MemoryProbeTest, NoCgroupInformationAtAllUsesMeminfo) {
  FakeRoot fake;
  WriteMachine(fake);
  MemoryProbe probe = MakeProbe(fake);
  EXPECT_EQ(probe.layout().memory_version, CgroupVersion::kNone);
  MemoryReading reading = probe.Read(0);
  EXPECT_EQ(reading.limit_bytes, 16 * kGiB);
  EXPECT_EQ(reading.available_bytes, 12 * kGiB);
  EXPECT_EQ(probe.TakeWarnings().size(), 1u);
}

TEST(MemoryProbeTest, MissingPressureWarnsAndReportsUnknown) {
  FakeRoot fake;
  WriteV1(fake, false);
  fake.Remove("proc/pressure");
  MemoryProbe probe = MakeProbe(fake);
  EXPECT_FALSE(probe.Read(0).pressure_known);
  EXPECT_EQ(probe.TakeWarnings().size(), 1u);
}

TEST(MemoryProbeTest, PressureWindowComesFromTotalDeltasBetweenReads) {
  FakeRoot fake;
  WriteV1(fake, false);
  MemoryProbe probe = MakeProbe(fake);
  EXPECT_DOUBLE_EQ(probe.Read(10'000).pressure_some_pct, 0.0);
  // 0.5 s of "some" stall and 0.1 s of "full" stall over the next second.
  fake.Write("proc/pressure/memory", "some avg10=0.00 avg60=0.00 avg300=0.00 total=500000\n"
                                     "full avg10=0.00 avg60=0.00 avg300=0.00 total=100000\n");
  MemoryReading reading = probe.Read(11'000);
  EXPECT_DOUBLE_EQ(reading.pressure_some_pct, 50.0);
  EXPECT_DOUBLE_EQ(reading.pressure_full_pct, 10.0);
}

// Half of the last second stalled somewhere on the machine, read by a probe whose box has a 2 GiB limit.
MemoryReading MachineStalledHalfTheTime(const FakeRoot& fake, uint64_t machine_available) {
  fake.Write("proc/meminfo", Meminfo(16 * kGiB, machine_available));
  fake.Write("sys/fs/cgroup/memory/ci/box/memory.limit_in_bytes", std::to_string(2 * kGiB));
  MemoryProbe probe = MakeProbe(fake);
  probe.Read(10'000);
  const char* stalled = "some avg10=0.00 avg60=0.00 avg300=0.00 total=500000\n"
                        "full avg10=0.00 avg60=0.00 avg300=0.00 total=100000\n";
  fake.Write("proc/pressure/memory", stalled);
  fake.Write("sys/fs/cgroup/unified/memory.pressure", stalled);  // a hybrid host's unified root, where written
  return probe.Read(11'000);
}

TEST(MemoryProbeTest, MachinePressureIsIgnoredWhileTheMachineHasTheBoxsWholeLimitFree) {
  // Other cgroups stalling at their own limits: the build in its 2 GiB box cannot make a machine with 12 GiB
  // available short, and one of them thrashing must not stop its admission.
  FakeRoot fake;
  WriteV1(fake, false);
  MemoryReading reading = MachineStalledHalfTheTime(fake, 12 * kGiB);
  EXPECT_TRUE(reading.from_cgroup);
  EXPECT_TRUE(reading.pressure_known);
  EXPECT_DOUBLE_EQ(reading.pressure_some_pct, 0.0);
  EXPECT_DOUBLE_EQ(reading.pressure_full_pct, 0.0);
}

TEST(MemoryProbeTest, AHybridHostsUnifiedRootIsTheMachinesPressureToo) {
  // Newer kernels give the unified tree's root cgroup PSI files: on a hybrid host whose processes sit there, that
  // is every task on the machine, not this build's.
  FakeRoot fake;
  WriteV1(fake, true);
  EXPECT_DOUBLE_EQ(MachineStalledHalfTheTime(fake, 12 * kGiB).pressure_some_pct, 0.0);
}

TEST(MemoryProbeTest, AContainersNamespaceRootKeepsItsOwnPressure) {
  // With a cgroup namespace the container's own cgroup is where the tree is mounted; unlike the real root it has
  // a cgroup.type, and its PSI is the container's.
  FakeRoot fake;
  WriteV1(fake, true);
  fake.Write("sys/fs/cgroup/unified/cgroup.type", "domain\n");
  EXPECT_DOUBLE_EQ(MachineStalledHalfTheTime(fake, 12 * kGiB).pressure_some_pct, 50.0);
}

TEST(MemoryProbeTest, MachinePressureCountsOnceTheMachineHasLessFreeThanTheBoxsLimit) {
  FakeRoot fake;
  WriteV1(fake, false);
  MemoryReading reading = MachineStalledHalfTheTime(fake, 1 * kGiB);
  EXPECT_TRUE(reading.from_cgroup);
  EXPECT_DOUBLE_EQ(reading.pressure_some_pct, 50.0);
  EXPECT_DOUBLE_EQ(reading.pressure_full_pct, 10.0);
}

TEST(MemoryProbeTest, ReadWithoutTimeUsesTheInjectedClock) {
  struct FixedClock : Clock {
    int64_t NowMs() const override { return 4242; }
  } clock;
  FakeRoot fake;
  WriteV1(fake, false);
  MemoryProbeOptions options;
  options.root = fake.root();
  options.clock = &clock;
  MemoryProbe probe(options);
  EXPECT_EQ(probe.Read().taken_at_ms, 4242);
}

// The real machine: whatever it is, the reading must be self-consistent, and cheap enough to take
// after every admission.
TEST(MemoryProbeTest, RealSystemReadingIsConsistentAndCheap) {
  MemoryProbe probe(MemoryProbeOptions{});
  MemoryReading reading = probe.Read();
  ASSERT_GT(reading.limit_bytes, 0u);
  EXPECT_GT(reading.available_bytes, 0u);
  EXPECT_LE(reading.available_bytes, reading.limit_bytes);
  EXPECT_EQ(reading.used_bytes, reading.limit_bytes - reading.available_bytes);
  constexpr int kReads = 200;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kReads; ++i) probe.Read();
  double per_read_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / kReads;
  std::printf("probe: limit %.0f MiB, available %.0f MiB, from_cgroup %d, %.1f us per Read()\n",
              reading.limit_bytes / double(kMiB), reading.available_bytes / double(kMiB), reading.from_cgroup,
              per_read_us);
  for (const std::string& warning : probe.TakeWarnings()) std::printf("probe warning: %s\n", warning.c_str());
  EXPECT_LT(per_read_us, 2000.0);
}

PsiSnapshot Psi(uint64_t some_us, uint64_t full_us, double avg10 = 0.0) {
  PsiSnapshot snapshot;
  snapshot.some = {avg10, some_us};
  snapshot.full = {avg10, full_us};
  return snapshot;
}

TEST(PressureWindowTest, FirstReadingReportsAvg10) {
  PressureWindow window(2000, 100);
  EXPECT_DOUBLE_EQ(window.Add(0, Psi(0, 0, 12.5)).some, 12.5);
}

TEST(PressureWindowTest, ReadsTooCloseTogetherKeepTheLastFigure) {
  PressureWindow window(2000, 100);
  window.Add(0, Psi(0, 0));
  EXPECT_DOUBLE_EQ(window.Add(1000, Psi(200'000, 0)).some, 20.0);
  // 10 ms later with a burst: too short a span to trust alone, measured from the old base instead.
  EXPECT_NEAR(window.Add(1010, Psi(210'000, 0)).some, 210'000.0 / 1'010'000.0 * 100.0, 1e-9);
}

TEST(PressureWindowTest, OldSamplesLeaveTheWindow) {
  PressureWindow window(1000, 100);
  window.Add(0, Psi(0, 0));
  window.Add(1000, Psi(1'000'000, 0));  // fully stalled during the first second
  // The second second is quiet: with a one-second window the first second no longer counts.
  EXPECT_DOUBLE_EQ(window.Add(2000, Psi(1'000'000, 0)).some, 0.0);
}

TEST(PressureWindowTest, CounterResetStartsOver) {
  PressureWindow window(2000, 100);
  window.Add(0, Psi(5'000'000, 0));
  window.Add(1000, Psi(5'500'000, 0));
  window.Add(1500, Psi(10, 0, 3.0));  // source restarted: no negative delta, keep the last figure
  EXPECT_DOUBLE_EQ(window.Add(2500, Psi(100'010, 0)).some, 10.0);
}

}  // namespace
}  // namespace headroom
