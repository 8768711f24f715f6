// RemoteJobs: pool slots for remote-eligible jobs, fallback detection from samples and peaks, per-mode outcomes.
#include <gtest/gtest.h>

#include "headroom/admission/remote_jobs.h"
#include "headroom/util/byte_size.h"

namespace headroom {
namespace {

TEST(RemoteJobsTest, ThePoolBoundsRemoteJobs) {
  RemoteJobs jobs(2);
  EXPECT_TRUE(jobs.MayStartRemote());
  EXPECT_TRUE(jobs.StartedRemote(1, 42 * kMiB));
  EXPECT_TRUE(jobs.StartedRemote(2, 42 * kMiB));
  EXPECT_FALSE(jobs.MayStartRemote());
  EXPECT_FALSE(jobs.StartedRemote(3, 42 * kMiB));
  EXPECT_EQ(ExecMode::kRemote, jobs.Finished(1, 40 * kMiB));
  EXPECT_TRUE(jobs.MayStartRemote());
  EXPECT_EQ(2u, jobs.counts().most_at_once);
}

TEST(RemoteJobsTest, AJobGrowingPastItsResidualFallsBackOnceAndFreesItsSlot) {
  RemoteJobs jobs(1);
  ASSERT_TRUE(jobs.StartedRemote(7, 42 * kMiB));
  EXPECT_FALSE(jobs.Observe(7, 60 * kMiB));  // preprocessing: still remote
  EXPECT_TRUE(jobs.IsRemote(7));
  EXPECT_TRUE(jobs.Observe(7, 250 * kMiB));  // compiling here now
  EXPECT_FALSE(jobs.IsRemote(7));
  EXPECT_TRUE(jobs.MayStartRemote());         // its slot went back to the pool
  EXPECT_FALSE(jobs.Observe(7, 300 * kMiB));  // reported once
  EXPECT_EQ(ExecMode::kLocal, jobs.Finished(7, 300 * kMiB));  // its peak is a local compile's
  EXPECT_EQ(1u, jobs.counts().fell_back);
  EXPECT_EQ(0u, jobs.counts().remote);
}

TEST(RemoteJobsTest, APeakPastTheResidualBetweenSamplesIsAFallbackToo) {
  RemoteJobs jobs(4);
  ASSERT_TRUE(jobs.StartedRemote(1, 42 * kMiB));
  EXPECT_EQ(ExecMode::kLocal, jobs.Finished(1, 300 * kMiB));
  EXPECT_EQ(1u, jobs.counts().fell_back);
  EXPECT_EQ(ExecMode::kLocal, jobs.Finished(99, 1 * kMiB));  // never started remote
  jobs.Observe(99, 1 * kGiB);                                // unknown jobs are ignored
  EXPECT_EQ(1u, jobs.counts().fell_back);
}

TEST(RemoteJobsTest, Counts) {
  RemoteJobs jobs(4);
  jobs.StartedLocal();
  for (uint64_t id = 1; id <= 3; ++id) ASSERT_TRUE(jobs.StartedRemote(id, 42 * kMiB));
  jobs.Finished(1, 40 * kMiB);
  jobs.Finished(2, 41 * kMiB);
  jobs.Finished(3, 400 * kMiB);
  EXPECT_EQ(2u, jobs.counts().remote);
  EXPECT_EQ(1u, jobs.counts().fell_back);
  EXPECT_EQ(1u, jobs.counts().local);
  EXPECT_EQ(3u, jobs.counts().most_at_once);
}

}  // namespace
}  // namespace headroom
