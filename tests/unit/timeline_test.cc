// Tests for BuildTimeline (include/headroom/report/timeline.h): lanes, and what it keeps without details
// (the summary's peak sample and heaviest jobs only, whatever the build's length).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "headroom/report/timeline.h"

namespace headroom {
namespace {

TimelineJob Started(const std::string& output, int64_t start_ms) {
  TimelineJob job;
  job.output = output;
  job.command = "cc -c " + output;
  job.rule = "cc";
  job.class_key = "cc cc -c";
  job.start_ms = start_ms;
  return job;
}

MemorySample SampleUsing(int64_t t_ms, uint64_t used, std::vector<JobUsage> jobs = {}) {
  MemorySample sample;
  sample.t_ms = t_ms;
  sample.used_bytes = used;
  sample.jobs = std::move(jobs);
  return sample;
}

std::vector<std::string> Outputs(const BuildTimeline& timeline) {
  std::vector<std::string> outputs;
  for (const TimelineJob& job : timeline.jobs()) outputs.push_back(job.output);
  return outputs;
}

TEST(TimelineTest, JobsTakeTheLowestFreeLane) {
  for (bool details : {true, false}) {
    BuildTimeline timeline;
    timeline.set_keep_details(details);
    const size_t a = timeline.JobStarted(Started("a", 0));
    const size_t b = timeline.JobStarted(Started("b", 0));
    timeline.JobFinished(a, 10, 5, "cgroup", "ok", 0);
    const size_t c = timeline.JobStarted(Started("c", 20));  // a's lane is free again
    timeline.JobFinished(b, 30, 6, "cgroup", "ok", 0);
    timeline.JobFinished(c, 40, 7, "cgroup", "ok", 0);
    ASSERT_EQ(Outputs(timeline), (std::vector<std::string>{"a", "b", "c"})) << details;
    EXPECT_EQ(timeline.jobs()[0].slot, 0);
    EXPECT_EQ(timeline.jobs()[1].slot, 1);
    EXPECT_EQ(timeline.jobs()[2].slot, 0);
  }
}

TEST(TimelineTest, WithDetailsEveryJobAndSampleIsKept) {
  BuildTimeline timeline;
  for (int i = 0; i < 100; ++i) {
    const size_t job = timeline.JobStarted(Started("o" + std::to_string(i), i));
    timeline.Sample(SampleUsing(i, 10 + i % 7, {{job, 10}}));
    timeline.JobFinished(job, i + 1, i % 3 == 0 ? 0 : 100 + i, "cgroup", "ok", 0);
  }
  EXPECT_EQ(timeline.jobs().size(), 100u);
  EXPECT_EQ(timeline.jobs()[5].command, "cc -c o5");
  EXPECT_EQ(timeline.samples().size(), 100u);
  EXPECT_EQ(timeline.samples()[3].jobs.size(), 1u);
  timeline.Mark({5, "wait", "o5", "needs more"});
  EXPECT_EQ(timeline.markers().size(), 1u);
}

// A long build without a trace or report holds a fixed amount: the heaviest measured jobs, in start
// order, and the one sample the build's peak came from.
TEST(TimelineTest, WithoutDetailsOnlyTheHeaviestJobsAndThePeakSampleRemain) {
  BuildTimeline timeline;
  timeline.set_keep_details(false);
  std::vector<size_t> running;
  for (int i = 0; i < 10000; ++i) {
    running.push_back(timeline.JobStarted(Started("o" + std::to_string(i), i)));
    timeline.Sample(SampleUsing(i, i == 5000 ? 900 : 10 + i % 50, {{running.back(), 1}}));
    timeline.Mark({i, "wait", "o" + std::to_string(i), "needs ~256 MiB"});
    if (running.size() == 8) {  // jobs end out of start order
      for (size_t k = running.size(); k-- > 0;) {
        const uint64_t index = running[k];
        const uint64_t peak = index % 1000 == 7 ? 0 : (index * 7919) % 100000;  // unmeasured ones too
        timeline.JobFinished(running[k], i + 1, peak, "cgroup", index == 3 ? "failed" : "ok", 0);
      }
      running.clear();
    }
  }
  for (size_t handle : running) timeline.JobFinished(handle, 20000, 5, "sampled", "interrupted", -1);

  // The 16 heaviest of the peaks (index * 7919) % 100000, index < 10000, listed by start.
  std::vector<std::pair<uint64_t, size_t>> all;
  for (size_t index = 0; index < 10000; ++index) {
    if (index % 1000 != 7) all.emplace_back((index * 7919) % 100000, index);
  }
  std::sort(all.begin(), all.end(), [](auto a, auto b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  std::vector<size_t> expected;
  for (size_t k = 0; k < BuildTimeline::kHeaviestKeptWithoutDetails; ++k) expected.push_back(all[k].second);
  std::sort(expected.begin(), expected.end());
  std::vector<std::string> expected_outputs;
  for (size_t index : expected) expected_outputs.push_back("o" + std::to_string(index));
  EXPECT_EQ(Outputs(timeline), expected_outputs);
  for (const TimelineJob& job : timeline.jobs()) {
    EXPECT_TRUE(job.command.empty() && job.rule.empty() && job.class_key.empty()) << job.output;
    EXPECT_EQ(job.peak_method, "cgroup");
    EXPECT_GE(job.end_ms, job.start_ms);
  }
  EXPECT_TRUE(timeline.markers().empty());
  ASSERT_EQ(timeline.samples().size(), 1u);
  EXPECT_EQ(timeline.samples()[0].used_bytes, 900u);
  EXPECT_EQ(timeline.samples()[0].t_ms, 5000);
  EXPECT_TRUE(timeline.samples()[0].jobs.empty());
}

TEST(TimelineTest, WithoutDetailsEqualPeaksKeepTheEarliestStarts) {
  BuildTimeline timeline;
  timeline.set_keep_details(false);
  std::vector<size_t> handles;
  for (int i = 0; i < 40; ++i) handles.push_back(timeline.JobStarted(Started("o" + std::to_string(i), i)));
  for (size_t k = handles.size(); k-- > 0;) timeline.JobFinished(handles[k], 100, 64, "cgroup", "ok", 0);
  std::vector<std::string> expected;
  for (size_t i = 0; i < BuildTimeline::kHeaviestKeptWithoutDetails; ++i) expected.push_back("o" + std::to_string(i));
  EXPECT_EQ(Outputs(timeline), expected);
}

TEST(TimelineTest, WithoutDetailsAnInterruptedJobIsStillListed) {
  BuildTimeline timeline;
  timeline.set_keep_details(false);
  const size_t job = timeline.JobStarted(Started("big.o", 0));
  EXPECT_TRUE(timeline.jobs().empty());  // running jobs are not listed until they end
  timeline.JobFinished(job, 50, 3u << 30, "sampled", "interrupted", -1);
  timeline.JobFinished(job, 60, 1, "sampled", "ok", 0);  // a second end changes nothing
  ASSERT_EQ(timeline.jobs().size(), 1u);
  EXPECT_EQ(timeline.jobs()[0].outcome, "interrupted");
  EXPECT_EQ(timeline.jobs()[0].end_ms, 50);
}

}  // namespace
}  // namespace headroom
