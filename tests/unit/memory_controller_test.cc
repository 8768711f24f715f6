// MemoryController inside the real Builder with fakes: a fake /proc tree for the budget, the fake
// process runner, and edge hints for estimates; checks that admission holds the budget, that
// --mem-budget binds, that light jobs run at full -j, and that everything measured is learned.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "fakes.h"
#include "headroom/admission/memory_controller.h"
#include "headroom/build/builder.h"
#include "headroom/estimator/estimator.h"
#include "headroom/history/history_store.h"
#include "headroom/logs/build_log.h"
#include "headroom/logs/deps_log.h"
#include "headroom/manifest/manifest_parser.h"
#include "headroom/memory/job_meter.h"
#include "headroom/memory/memory_probe.h"
#include "headroom/status/status.h"
#include "memory_test_support.h"

namespace headroom {
namespace {

using testing::FakeProcessRunner;
using testing::ManualClock;
using testing::VirtualFileSystem;

constexpr uint64_t kGiBytes = 1024ull * 1024 * 1024;

class QuietStatus : public Status {
 public:
  void PlanHasTotalEdges(int) override {}
  void BuildEdgeStarted(const Edge*, int64_t) override {}
  void BuildEdgeFinished(Edge*, int64_t, int64_t, bool, int, const std::string&) override {}
  void BuildStarted() override {}
  void BuildFinished() override {}
  void UpdateMemory(const MemoryStatus& memory) override { last_memory = memory; }
  void Info(const std::string&) override {}
  void Warning(const std::string& message) override { warnings.push_back(message); }
  void Error(const std::string&) override {}
  MemoryStatus last_memory;
  std::vector<std::string> warnings;
};

class MemoryControllerTest : public ::testing::Test {
 protected:
  // A machine with `total` bytes, all available, no cgroup limit, quiet pressure.
  void SetUpMachine(uint64_t total) {
    fake_.Write("proc/meminfo", fmt::format("MemTotal: {} kB\nMemFree: {} kB\nMemAvailable: {} kB\n", total / 1024,
                                            total / 1024, total / 1024));
    fake_.Write("proc/pressure/memory",
                "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
    fake_.Write("proc/self/cgroup", "0::/\n");
    fake_.Write("proc/self/mountinfo", "");
    fake_.Write("proc/vmstat", "oom_kill 0\n");
    fake_.MakeDir("proc/1");
  }

  // Builds `jobs` independent edges with the given memory hint at -j`parallelism`.
  void Build(int jobs, const std::string& hint, int parallelism) {
    std::string manifest = "rule touch\n  command = touch $out\n";
    std::string all = "build all: phony";
    for (int i = 0; i < jobs; ++i) {
      manifest += fmt::format("build o{}: touch\n  headroom_mem = {}\n", i, hint);
      all += fmt::format(" o{}", i);
    }
    ManifestParser parser(&state_, &fs_);
    std::string err;
    ASSERT_TRUE(parser.ParseTest(manifest + all + "\n", &err)) << err;

    MemoryProbeOptions probe_options;
    probe_options.root = fake_.Path("");
    probe_options.clock = &clock_;
    MemoryProbe probe(probe_options);
    JobMeterOptions meter_options;
    meter_options.root = fake_.Path("");
    meter_options.use_cgroups = false;
    JobMeter meter(std::unique_ptr<JobCgroups>(), meter_options);
    Estimator estimator(&history_, {});
    MemoryController controller({&probe, &meter, &estimator, &log_, &status_, &clock_}, memory_, false);

    config_.parallelism = parallelism;
    Builder builder(&state_, config_, &log_, &deps_log_, &fs_, &status_, &clock_);
    builder.set_runner(&runner_);
    builder.set_job_controller(&controller);
    ASSERT_TRUE(builder.AddTarget("all", &err)) << err;
    ASSERT_EQ(BuildResult::kSucceeded, builder.Build(&err)) << err;
    budget_ = controller.budget_bytes();
  }

  memory_test::FakeRoot fake_;
  State state_;
  VirtualFileSystem fs_;
  FakeProcessRunner runner_{&fs_};
  ManualClock clock_;
  BuildConfig config_;
  MemoryConfig memory_;
  BuildLog log_;
  DepsLog deps_log_;
  HistoryStore history_;
  QuietStatus status_;
  uint64_t budget_ = 0;
};

TEST_F(MemoryControllerTest, HoldsTheBudgetWhereParallelismWouldNot) {
  SetUpMachine(8 * kGiBytes);
  // 1.5 GiB each, 8 GiB machine, 512 MiB reserve: five fit at once, -j8 would start six.
  Build(6, "1536M", 8);
  EXPECT_EQ(8 * kGiBytes, budget_);
  EXPECT_EQ(5u, runner_.max_running);
  EXPECT_EQ(6u, runner_.commands_run.size());
}

TEST_F(MemoryControllerTest, MemBudgetFlagBinds) {
  SetUpMachine(8 * kGiBytes);
  memory_.budget_bytes = 3 * kGiBytes;
  Build(6, "1G", 8);
  EXPECT_EQ(3 * kGiBytes, budget_);
  EXPECT_EQ(2u, runner_.max_running);
}

TEST_F(MemoryControllerTest, LightJobsRunAtFullParallelism) {
  SetUpMachine(8 * kGiBytes);
  Build(12, "64M", 8);
  EXPECT_EQ(8u, runner_.max_running);
}

TEST_F(MemoryControllerTest, AJobLargerThanTheBudgetStillRunsAloneWithAWarning) {
  SetUpMachine(2 * kGiBytes);
  Build(2, "4G", 4);
  EXPECT_EQ(1u, runner_.max_running);
  EXPECT_EQ(2u, runner_.commands_run.size());
  ASSERT_FALSE(status_.warnings.empty());
  EXPECT_NE(std::string::npos, status_.warnings[0].find("running it alone"));
}

TEST_F(MemoryControllerTest, FinishedJobsAreLearned) {
  SetUpMachine(8 * kGiBytes);
  Build(3, "64M", 4);
  EXPECT_EQ(3u, history_.edge_count());
  EXPECT_NE(nullptr, history_.FindEdge("o0", log_.HashCommand("touch o0")));
}

}  // namespace
}  // namespace headroom
