// Tests for ProcessGroupSampler: over a fake /proc, on a real multi-process memhog, and its CPU cost
// at the default interval (the figure quoted in docs/memory-observation.md).
#include "headroom/memory/process_group_sampler.h"

#include <time.h>
#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "headroom/memory/job_meter.h"
#include "memory_test_support.h"

namespace headroom {
namespace {

using memory_test::FakeRoot;

void WriteFakeProcess(const FakeRoot& fake, int pid, const std::string& comm, int pgid, uint64_t resident_pages) {
  fake.Write(fmt::format("proc/{}/stat", pid), fmt::format("{} ({}) S 1 {} {} 0 -1 0", pid, comm, pgid, pgid));
  fake.Write(fmt::format("proc/{}/statm", pid), fmt::format("99999 {} 10 1 0 5 0\n", resident_pages));
}

uint64_t Pages(uint64_t bytes) { return bytes / static_cast<uint64_t>(sysconf(_SC_PAGESIZE)); }

TEST(ProcessGroupSamplerTest, SumsTheGroupAndKeepsThePeak) {
  FakeRoot fake;
  WriteFakeProcess(fake, 100, "nvcc", 100, Pages(10 * kMiB));
  WriteFakeProcess(fake, 101, "cicc) (odd", 100, Pages(300 * kMiB));
  WriteFakeProcess(fake, 102, "ptxas", 100, Pages(100 * kMiB));
  WriteFakeProcess(fake, 200, "other", 200, Pages(999 * kMiB));
  fake.Write("proc/meminfo", "not a process\n");
  ProcessGroupSampler sampler(fake.Path("proc"));
  sampler.Track(100);
  sampler.Sample();
  EXPECT_EQ(sampler.CurrentBytes(100), 410 * kMiB);
  EXPECT_EQ(sampler.ProcessCount(100), 3u);

  // cicc finishes: usage drops, the peak stays.
  fake.Remove("proc/101");
  sampler.Sample();
  EXPECT_EQ(sampler.CurrentBytes(100), 110 * kMiB);
  EXPECT_EQ(sampler.PeakBytes(100), 410 * kMiB);
  EXPECT_EQ(sampler.CurrentBytes(200), 0u);  // not tracked
}

TEST(ProcessGroupSamplerTest, NewProcessesJoinBetweenFullRescans) {
  FakeRoot fake;
  WriteFakeProcess(fake, 100, "sh", 100, Pages(4 * kMiB));
  ProcessGroupSampler sampler(fake.Path("proc"), /*full_rescan_every=*/1000);
  sampler.Track(100);
  sampler.Sample();
  WriteFakeProcess(fake, 150, "cc1plus", 100, Pages(200 * kMiB));
  sampler.Sample();
  EXPECT_EQ(sampler.CurrentBytes(100), 204 * kMiB);
}

TEST(ProcessGroupSamplerTest, LeaderClassifiedBeforeSetpgidIsLookedAtAgainWhenTracked) {
  FakeRoot fake;
  WriteFakeProcess(fake, 300, "sh", 1, Pages(4 * kMiB));  // not yet in its own group
  ProcessGroupSampler sampler(fake.Path("proc"), 1000);
  sampler.Track(999);
  sampler.Sample();
  WriteFakeProcess(fake, 300, "sh", 300, Pages(4 * kMiB));
  sampler.Track(300);
  sampler.Sample();
  EXPECT_EQ(sampler.CurrentBytes(300), 4 * kMiB);
}

TEST(ProcessGroupSamplerTest, MeasuresRealMultiProcessMemhogWithinTenPercent) {
  memory_test::MemhogProcess memhog =
      memory_test::StartMemhog({"--mb", "300", "--procs", "3", "--ramp-ms", "100", "--hold-ms", "1500"});
  ASSERT_GT(memhog.pid, 0);
  JobMeter meter(std::unique_ptr<JobCgroups>(), JobMeterOptions{});
  ASSERT_EQ(meter.PrepareJob(1), "");
  meter.JobStarted(1, memhog.pid);
  ASSERT_TRUE(memory_test::WaitForPeak(memhog));
  // The peak is held for 1.5 s after the signal: one sample now sees all of it.
  meter.Sample();
  JobMemoryResult result = meter.Finish(memory_test::ReapMemhog(memhog, 1));
  std::printf("sampled peak %.1f MiB, ru_maxrss %.1f MiB\n", result.sampled_peak_bytes / double(kMiB),
              result.rusage_peak_bytes / double(kMiB));
  EXPECT_EQ(result.peak_source, PeakSource::kSampled);
  EXPECT_NEAR(static_cast<double>(result.peak_bytes), 300.0 * kMiB, 30.0 * kMiB);
  EXPECT_FALSE(result.oom.oom_killed);
}

double ThreadCpuMs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// CPU per Sample() over the real /proc while a 4-process job is tracked, as a share of one core at the
// default interval. Prints the figure; the budget is 1%.
TEST(ProcessGroupSamplerTest, CostAtDefaultIntervalIsUnderOnePercentOfACore) {
  memory_test::MemhogProcess memhog =
      memory_test::StartMemhog({"--mb", "40", "--procs", "4", "--hold-ms", "3000"});
  ASSERT_GT(memhog.pid, 0);
  ASSERT_TRUE(memory_test::WaitForPeak(memhog));
  ProcessGroupSampler sampler;
  sampler.Track(memhog.pid);
  constexpr int kSamples = 500;
  double start = ThreadCpuMs();
  for (int i = 0; i < kSamples; ++i) sampler.Sample();
  double per_sample_ms = (ThreadCpuMs() - start) / kSamples;
  double percent_of_core = per_sample_ms / kDefaultSampleIntervalMs * 100.0;
  int process_count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") == std::string::npos) ++process_count;
  }
  std::printf("sampler: %.1f us CPU per sample with %d processes in /proc; at %d ms = %.3f%% of one core\n",
              per_sample_ms * 1000.0, process_count, kDefaultSampleIntervalMs, percent_of_core);
  EXPECT_EQ(sampler.ProcessCount(memhog.pid), 5u);
  EXPECT_LT(percent_of_core, 1.0);
  kill(-memhog.pid, SIGKILL);
  memory_test::ReapMemhog(memhog, 0);
}

}  // namespace
}  // namespace headroom
