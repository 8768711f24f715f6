// Tests for OOM attribution: the verdict and the strength of its evidence.
#include "headroom/memory/oom_attribution.h"

#include <gtest/gtest.h>

#include "memory_test_support.h"

namespace headroom {
namespace {

TEST(OomAttributionTest, CgroupCounterIsStrongEvenWithoutSigkill) {
  OomFacts facts;
  facts.cgroup_oom_kills = 1;
  facts.killed_by_sigkill = false;  // e.g. nvcc exiting 1 after its cicc was killed
  OomVerdict verdict = AttributeOom(facts);
  EXPECT_TRUE(verdict.oom_killed);
  EXPECT_EQ(verdict.evidence, OomEvidence::kStrong);
  EXPECT_STREQ(OomEvidenceName(verdict.evidence), "strong");
}

TEST(OomAttributionTest, CgroupWithoutKillsOverridesSystemCounter) {
  OomFacts facts;
  facts.cgroup_oom_kills = 0;
  facts.killed_by_sigkill = true;
  facts.system_oom_kills_at_start = 3;
  facts.system_oom_kills_at_end = 4;  // somebody else's OOM
  EXPECT_FALSE(AttributeOom(facts).oom_killed);
}

TEST(OomAttributionTest, SigkillWhileSystemCounterRoseIsWeak) {
  OomFacts facts;
  facts.killed_by_sigkill = true;
  facts.system_oom_kills_at_start = 3;
  facts.system_oom_kills_at_end = 5;
  OomVerdict verdict = AttributeOom(facts);
  EXPECT_TRUE(verdict.oom_killed);
  EXPECT_EQ(verdict.evidence, OomEvidence::kWeak);
  EXPECT_NE(verdict.explanation.find("2 OOM kill"), std::string::npos) << verdict.explanation;
}

TEST(OomAttributionTest, SigkillAloneIsNotAnOom) {
  OomFacts facts;
  facts.killed_by_sigkill = true;
  facts.system_oom_kills_at_start = 3;
  facts.system_oom_kills_at_end = 3;
  EXPECT_FALSE(AttributeOom(facts).oom_killed);
  facts.system_oom_kills_at_end.reset();  // vmstat unreadable
  EXPECT_FALSE(AttributeOom(facts).oom_killed);
}

TEST(OomAttributionTest, RisingSystemCounterWithASuccessIsNotAnOom) {
  OomFacts facts;
  facts.system_oom_kills_at_start = 0;
  facts.system_oom_kills_at_end = 1;
  EXPECT_FALSE(AttributeOom(facts).oom_killed);
}

// Without a job cgroup, a job whose child the kernel killed (nvcc after its cicc, memhog after a child) exits 1,
// not by SIGKILL: a failure while the system counter rose is weak evidence too (found unguarded as nobody on v1).
TEST(OomAttributionTest, AFailureWhileTheSystemCounterRoseIsWeak) {
  OomFacts facts;
  facts.exited_non_zero = true;
  facts.system_oom_kills_at_start = 4;
  facts.system_oom_kills_at_end = 5;
  OomVerdict verdict = AttributeOom(facts);
  EXPECT_TRUE(verdict.oom_killed);
  EXPECT_EQ(verdict.evidence, OomEvidence::kWeak);
  EXPECT_NE(verdict.explanation.find("failed while the system counted 1 OOM kill"), std::string::npos)
      << verdict.explanation;
  facts.system_oom_kills_at_end = 4;
  EXPECT_FALSE(AttributeOom(facts).oom_killed);  // an ordinary failure
}

TEST(OomAttributionTest, SystemCounterReadsVmstat) {
  memory_test::FakeRoot fake;
  fake.Write("proc/vmstat", "nr_free_pages 100\noom_kill 7\nnr_dirty 3\n");
  SystemOomCounter counter(fake.root());
  EXPECT_EQ(counter.Read(), 7u);
  fake.Write("proc/vmstat", "nr_free_pages 100\noom_kill 8\n");
  EXPECT_EQ(counter.Read(), 8u);
  EXPECT_EQ(SystemOomCounter("/nonexistent").Read(), std::nullopt);
}

}  // namespace
}  // namespace headroom
