// A job that fails while the build guard's limit is hit (a tmpfs write gets ENOMEM at a v1 limit) is requeued
// once: MemoryController inside the real Builder, a fake v1 cgroup tree whose memory.failcnt the fake runner
// raises during chosen runs, and scripted exits.
#include <gtest/gtest.h>

#include <map>

#include <fmt/format.h>

#include "fakes.h"
#include "headroom/admission/memory_controller.h"
#include "headroom/build/builder.h"
#include "headroom/estimator/estimator.h"
#include "headroom/history/history_store.h"
#include "headroom/logs/build_log.h"
#include "headroom/logs/deps_log.h"
#include "headroom/manifest/manifest_parser.h"
#include "headroom/memory/job_cgroups.h"
#include "headroom/memory/job_meter.h"
#include "headroom/memory/memory_probe.h"
#include "memory_test_support.h"

namespace headroom {
namespace {

using fakes::FakeProcessRunner;
using fakes::ManualClock;
using fakes::VirtualFileSystem;

// One run of a command: how it exits, what it prints, and whether the build group hit its limit meanwhile.
struct ScriptedRun {
  int exit_code = 0;
  std::string output;
  bool hit_the_limit = false;
};

// The fake runner, with each command's runs scripted in order (runs past the script succeed quietly).
class ScriptedRunner : public fakes::AdjustingRunner {
 public:
  ScriptedRunner(VirtualFileSystem* fs, memory_test::FakeRoot* root) : AdjustingRunner(fs), root_(root) {}

  std::map<std::string, std::vector<ScriptedRun>> script;
  std::map<std::string, int> runs;

 private:
  void Adjust(JobExit* exit) override {
    const std::string& command = CommandOf(*exit);
    const size_t run = static_cast<size_t>(runs[command]++);
    auto it = script.find(command);
    if (it == script.end() || run >= it->second.size()) return;
    const ScriptedRun& scripted = it->second[run];
    exit->exit_code = scripted.exit_code;
    exit->output = scripted.output;
    if (scripted.hit_the_limit) root_->Write("mem/hr/memory.failcnt", std::to_string(++failcnt_) + "\n");
  }

  memory_test::FakeRoot* root_;
  int failcnt_ = 0;
};

class RecordingStatus : public fakes::NullStatus {
 public:
  void BuildEdgeFinished(Edge* edge, int64_t, int64_t, bool success, int, const std::string& output) override {
    finished.push_back({edge->outputs[0]->path, success, output});
  }
  void Warning(const std::string& message) override { warnings.push_back(message); }
  struct Finished {
    std::string output_path;
    bool success;
    std::string output;
  };
  std::vector<Finished> finished;
  std::vector<std::string> warnings;
};

constexpr char kEnomem[] = "dd: error writing '/dev/shm/t': Cannot allocate memory\n";

class GuardRequeueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_.WriteQuietMachine(8ull << 30);
    // A v1 per-build cgroup as the kernel would show it (files exist; the guard writes into them).
    fake_.Write("mem/hr/memory.limit_in_bytes", "9223372036854771712\n");
    fake_.Write("mem/hr/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n");
    fake_.Write("mem/hr/cgroup.event_control", "");
    fake_.Write("mem/hr/memory.failcnt", "0\n");
  }

  // Builds "touch a" (and "touch b" beside it) with or without the guard; returns the build's result.
  BuildResult Build(bool guarded) {
    ManifestParser parser(&state_, &fs_);
    std::string err;
    EXPECT_TRUE(parser.ParseTest("rule touch\n  command = touch $out\nbuild a: touch\nbuild b: touch\n", &err))
        << err;
    MemoryProbe probe(memory_test::FakeProbeOptions(fake_, &clock_));
    std::unique_ptr<JobCgroups> cgroups;
    if (guarded) {
      JobCgroupsOptions options;
      options.version = CgroupVersion::kV1;
      options.parent_dir = fake_.Path("mem");
      options.build_name = "hr";
      options.recycle_max_leftover_bytes = 0;
      cgroups = JobCgroups::Create(options, &err);
      EXPECT_NE(cgroups, nullptr) << err;
    }
    JobMeter meter(std::move(cgroups), memory_test::FakeMeterOptions(fake_, /*use_cgroups=*/guarded));
    Estimator estimator(&history_, {});
    MemoryController controller({&probe, &meter, &estimator, &log_, &status_, &clock_}, memory_, true);
    BuildConfig config;
    config.parallelism = 2;
    Builder builder(&state_, config, &log_, &deps_log_, &fs_, &status_, &clock_);
    builder.set_runner(&runner_);
    builder.set_job_controller(&controller);
    EXPECT_TRUE(builder.AddTarget("a", &err)) << err;
    EXPECT_TRUE(builder.AddTarget("b", &err)) << err;
    ::testing::internal::CaptureStderr();
    BuildResult result = builder.Build(&err);
    explained_ = ::testing::internal::GetCapturedStderr();
    guard_was_active_ = controller.guard_active();
    decisions_ = controller.decisions();
    return result;
  }

  int RunsOf(const std::string& command) { return runner_.runs[command]; }

  memory_test::FakeRoot fake_;
  State state_;
  VirtualFileSystem fs_;
  ScriptedRunner runner_{&fs_, &fake_};
  ManualClock clock_;
  MemoryConfig memory_;
  BuildLog log_;
  DepsLog deps_log_;
  HistoryStore history_;
  RecordingStatus status_;
  MemoryDecisions decisions_;
  std::string explained_;
  bool guard_was_active_ = false;
};

TEST_F(GuardRequeueTest, AFailureWhileTheLimitWasHitIsRetriedOnceAndItsOutputNotShown) {
  runner_.script["touch a"] = {{1, kEnomem, true}, {0, "", false}};
  ASSERT_EQ(Build(true), BuildResult::kSucceeded);
  ASSERT_TRUE(guard_was_active_) << "the fake v1 tree should take the guard";
  EXPECT_EQ(RunsOf("touch a"), 2);
  EXPECT_EQ(decisions_.limit_failures, 1);
  EXPECT_EQ(decisions_.requeues, 1);
  EXPECT_EQ(decisions_.oom_kills + decisions_.safety_kills, 0);
  // The failed attempt is a retry, not a FAILED edge: each edge finishes once, successfully.
  ASSERT_EQ(status_.finished.size(), 2u);
  for (const auto& finished : status_.finished) EXPECT_TRUE(finished.success) << finished.output_path;
  ASSERT_EQ(status_.warnings.size(), 1u);
  EXPECT_NE(status_.warnings[0].find("'a' failed at the build's memory limit"), std::string::npos)
      << status_.warnings[0];
  EXPECT_NE(explained_.find("ninja explain: retrying 'a': it exited with 1 after the build hit its"),
            std::string::npos)
      << explained_;
  EXPECT_NE(explained_.find("Cannot allocate memory"), std::string::npos) << explained_;
  // Learned as a run headroom's cap ended: its peak is a lower bound, not a completed run's figure.
  const EdgeHistory* learned = history_.FindEdge("a", log_.HashCommand("touch a"));
  ASSERT_NE(learned, nullptr);
  ASSERT_FALSE(learned->recent.empty());
  EXPECT_TRUE(learned->recent.front().killed());
}

TEST_F(GuardRequeueTest, AFailureWithoutALimitHitFailsAsNinjaWould) {
  runner_.script["touch a"] = {{1, "a.c:1: error: expected ';'\n", false}};
  ASSERT_EQ(Build(true), BuildResult::kFailed);
  ASSERT_TRUE(guard_was_active_);
  EXPECT_EQ(RunsOf("touch a"), 1);
  EXPECT_EQ(decisions_.limit_failures, 0);
  EXPECT_EQ(decisions_.requeues, 0);
  EXPECT_TRUE(status_.warnings.empty());
  EXPECT_EQ(explained_.find("retrying"), std::string::npos) << explained_;
}

TEST_F(GuardRequeueTest, ASecondFailureFailsTheBuildWithItsOutputShownOnce) {
  const std::string error = "a.c:1: error: expected ';'\n";
  runner_.script["touch a"] = {{1, kEnomem, true}, {1, error, true}};
  ASSERT_EQ(Build(true), BuildResult::kFailed);
  EXPECT_EQ(RunsOf("touch a"), 2);
  EXPECT_EQ(decisions_.limit_failures, 1);
  EXPECT_EQ(decisions_.requeues, 1);
  int failed = 0;
  for (const auto& finished : status_.finished) {
    if (finished.output_path != "a") continue;
    EXPECT_FALSE(finished.success);
    EXPECT_EQ(finished.output, error) << "the retry's output, as the job printed it";
    ++failed;
  }
  EXPECT_EQ(failed, 1);
}

TEST_F(GuardRequeueTest, ASuccessWhileTheLimitWasHitIsLeftAlone) {
  runner_.script["touch a"] = {{0, "", true}};
  ASSERT_EQ(Build(true), BuildResult::kSucceeded);
  EXPECT_EQ(RunsOf("touch a"), 1);
  EXPECT_EQ(decisions_.limit_failures, 0);
  EXPECT_EQ(decisions_.requeues, 0);
  EXPECT_EQ(explained_, "") << "memory shaped nothing: -d explain says what ninja's would";
}

TEST_F(GuardRequeueTest, AnInterruptedJobIsNeverRetried) {
  runner_.script["touch a"] = {{130, "", true}};
  ASSERT_EQ(Build(true), BuildResult::kInterrupted);
  EXPECT_EQ(RunsOf("touch a"), 1);
  EXPECT_EQ(decisions_.limit_failures, 0);
}

TEST_F(GuardRequeueTest, WithoutAGuardNothingChanges) {
  runner_.script["touch a"] = {{1, kEnomem, true}};
  ASSERT_EQ(Build(false), BuildResult::kFailed);
  EXPECT_FALSE(guard_was_active_);
  EXPECT_EQ(RunsOf("touch a"), 1);
  EXPECT_EQ(decisions_.limit_failures, 0);
  EXPECT_EQ(decisions_.requeues, 0);
}

}  // namespace
}  // namespace headroom
