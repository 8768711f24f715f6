// Tests for the memory module's pure parsers (meminfo, stat files, limits, PSI, cgroup and mountinfo).
#include "headroom/memory/memory_parsers.h"

#include <gtest/gtest.h>

#include "headroom/memory/process_group_sampler.h"

namespace headroom {
namespace {

TEST(MemoryParsersTest, MeminfoValuesAreConvertedFromKilobytes) {
  const char* meminfo = "MemTotal:       24683584 kB\nMemFree:        24528404 kB\nMemAvailable:   24453888 kB\n";
  EXPECT_EQ(ParseMeminfoBytes(meminfo, "MemTotal"), 24683584ull * 1024);
  EXPECT_EQ(ParseMeminfoBytes(meminfo, "MemAvailable"), 24453888ull * 1024);
  EXPECT_EQ(ParseMeminfoBytes(meminfo, "Mem"), std::nullopt);  // a prefix of a key is not the key
  EXPECT_EQ(ParseMeminfoBytes("MemTotal: lots kB\n", "MemTotal"), std::nullopt);
}

TEST(MemoryParsersTest, KeyedValueFindsExactKey) {
  const char* stat = "inactive_anon 10\ninactive_file 385024\ntotal_inactive_file 999\n";
  EXPECT_EQ(ParseKeyedValue(stat, "inactive_file"), 385024u);
  EXPECT_EQ(ParseKeyedValue(stat, "total_inactive_file"), 999u);
  EXPECT_EQ(ParseKeyedValue(stat, "active_file"), std::nullopt);
  EXPECT_EQ(ParseKeyedValue("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", "oom_kill"), 3u);
}

TEST(MemoryParsersTest, CgroupLimitUnderstandsMaxAndV1NoLimit) {
  EXPECT_EQ(ParseCgroupLimit("max\n"), kUnlimitedBytes);
  EXPECT_EQ(ParseCgroupLimit("9223372036854771712\n"), kUnlimitedBytes);  // 2^63 rounded down to 4 KiB
  EXPECT_EQ(ParseCgroupLimit("9223372036854710272\n"), kUnlimitedBytes);  // ... to 64 KiB pages
  EXPECT_EQ(ParseCgroupLimit("2147483648\n"), 2147483648u);
  EXPECT_EQ(ParseCgroupLimit("two gigs"), std::nullopt);
  EXPECT_EQ(ParseCgroupLimit(""), std::nullopt);
}

TEST(MemoryParsersTest, PsiReadsAvg10AndTotals) {
  auto psi = ParsePsi(
      "some avg10=1.50 avg60=0.00 avg300=0.00 total=1234\nfull avg10=0.25 avg60=0.00 avg300=0.00 total=99\n");
  ASSERT_TRUE(psi.has_value());
  EXPECT_DOUBLE_EQ(psi->some.avg10, 1.5);
  EXPECT_EQ(psi->some.total_us, 1234u);
  EXPECT_DOUBLE_EQ(psi->full.avg10, 0.25);
  EXPECT_EQ(psi->full.total_us, 99u);
  // Older kernels print no "full" line for some resources: still usable.
  EXPECT_TRUE(ParsePsi("some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n").has_value());
  EXPECT_FALSE(ParsePsi("some avg10=0.00 avg60=0.00\n").has_value());
  EXPECT_FALSE(ParsePsi("").has_value());
}

TEST(MemoryParsersTest, ProcSelfCgroupSplitsOnFirstTwoColons) {
  auto memberships = ParseProcSelfCgroup("4:memory:/process_api/abc\n6:freezer,net_cls:/\n0::/odd:name\n");
  ASSERT_EQ(memberships.size(), 3u);
  EXPECT_EQ(memberships[0].hierarchy_id, 4);
  EXPECT_EQ(memberships[0].controllers, std::vector<std::string>{"memory"});
  EXPECT_EQ(memberships[0].path, "/process_api/abc");
  EXPECT_EQ(memberships[1].controllers, (std::vector<std::string>{"freezer", "net_cls"}));
  EXPECT_EQ(memberships[2].hierarchy_id, 0);
  EXPECT_TRUE(memberships[2].controllers.empty());
  EXPECT_EQ(memberships[2].path, "/odd:name");
}

TEST(MemoryParsersTest, MountinfoKeepsOnlyCgroupMountsAndHandlesOptionalFields) {
  auto mounts = ParseCgroupMounts(
      "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
      "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory\n"
      "41 31 0:38 /docker/abc /sys/fs/cgroup/my\\040tree rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n");
  ASSERT_EQ(mounts.size(), 2u);
  EXPECT_FALSE(mounts[0].is_v2);
  EXPECT_EQ(mounts[0].mount_point, "/sys/fs/cgroup/memory");
  EXPECT_EQ(mounts[0].super_options, (std::vector<std::string>{"rw", "memory"}));
  EXPECT_TRUE(mounts[1].is_v2);
  EXPECT_EQ(mounts[1].root, "/docker/abc");
  EXPECT_EQ(mounts[1].mount_point, "/sys/fs/cgroup/my tree");
}

TEST(MemoryParsersTest, ProcStatProcessGroupSurvivesOddCommandNames) {
  EXPECT_EQ(ParseStatProcessGroup("1234 (cc1plus) R 1200 1100 1100 0 -1 4194304"), 1100);
  EXPECT_EQ(ParseStatProcessGroup("1234 (a) b (c) S 1 77 77 0"), 77);
  EXPECT_EQ(ParseStatProcessGroup("1234 (truncated"), -1);
  EXPECT_EQ(ParseStatmResidentPages("25000 1200 300 10 0 900 0\n"), 1200u);
  EXPECT_EQ(ParseStatmResidentPages("garbage"), std::nullopt);
}

}  // namespace
}  // namespace headroom
