// Per-mode estimates and history (docs/scale-out.md, slice 2): with MemoryController's exec-mode hooks, a job
// that starts on the farm is estimated from its class's remote key with the farm's residual as its prior, and its
// peak is learned under the mode it ran in, so a family's residuals and its local peaks never mix.
#include <gtest/gtest.h>

#include <set>

#include "fakes.h"
#include "headroom/admission/memory_controller.h"
#include "headroom/util/byte_size.h"
#include "headroom/build/builder.h"
#include "headroom/estimator/command_line.h"
#include "headroom/estimator/estimator.h"
#include "headroom/estimator/exec_mode.h"
#include "headroom/history/history_store.h"
#include "headroom/logs/build_log.h"
#include "headroom/logs/deps_log.h"
#include "headroom/manifest/manifest_parser.h"
#include "headroom/memory/job_meter.h"
#include "headroom/memory/memory_probe.h"
#include "headroom/report/timeline.h"
#include "memory_test_support.h"

namespace headroom {
namespace {

using fakes::ManualClock;
using fakes::VirtualFileSystem;

// The fake runner, reporting every job's ru_maxrss as `max_rss_kb`.
class MeasuringRunner : public fakes::AdjustingRunner {
 public:
  using AdjustingRunner::AdjustingRunner;
  int64_t max_rss_kb = 0;

 private:
  void Adjust(JobExit* exit) override { exit->max_rss_kb = max_rss_kb; }
};

class ExecModeHistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const uint64_t total = 8 * 1024 * kMiB;
    fake_.WriteQuietMachine(total);
  }

  // Builds `manifest`'s target `all` through a MemoryController whose exec-mode hooks say each job starts
  // (`starts_remote`) and ends (`ran_remote`) on the farm.
  void BuildThrough(const std::string& manifest, bool starts_remote, bool ran_remote, const MemoryConfig& memory,
                    int parallelism) {
    ManifestParser parser(&state_, &fs_);
    std::string err;
    ASSERT_TRUE(parser.ParseTest(manifest, &err)) << err;
    MemoryProbe probe(memory_test::FakeProbeOptions(fake_, &clock_));
    JobMeter meter(std::unique_ptr<JobCgroups>(), memory_test::FakeMeterOptions(fake_, /*use_cgroups=*/false));
    Estimator estimator(&history_, {});
    MemoryController controller({&probe, &meter, &estimator, &log_, &status_, &clock_}, memory, false);
    controller.set_timeline(&timeline_);
    controller.set_exec_mode_hooks({[starts_remote](const Edge*) { return starts_remote; },
                                    [ran_remote](const Edge*) { return ran_remote; },
                                    [](const Edge*) { return 40 * kMiB; }});
    BuildConfig config;
    config.parallelism = parallelism;
    Builder builder(&state_, config, &log_, &deps_log_, &fs_, &status_, &clock_);
    builder.set_runner(&runner_);
    builder.set_job_controller(&controller);
    ASSERT_TRUE(builder.AddTarget("all", &err)) << err;
    ASSERT_EQ(BuildResult::kSucceeded, builder.Build(&err)) << err;
  }

  // Builds two compiles through distcc; `remote` says whether each starts and ends on the farm.
  void Build(bool starts_remote, bool ran_remote) {
    // -j1: b.o is estimated after a.o taught its class.
    BuildThrough("rule cxx\n  command = distcc g++ -O2 -c $out\n"
                 "build a.o: cxx\nbuild b.o: cxx\nbuild all: phony a.o b.o\n",
                 starts_remote, ran_remote, MemoryConfig{}, 1);
  }

  // Two long compiles (3 GiB hints, no duration yet) through distcc at -j2 with one usable CPU: how many ran at once.
  size_t MostAtOnceOnOneCpu(bool starts_remote) {
    MemoryConfig memory;
    memory.cpus = 1;
    BuildThrough("rule cxx\n  command = distcc g++ -O2 $flags -c $out\n"
                 "build a.o: cxx\n  flags = -DK=1\n  headroom_mem = 3G\n"
                 "build b.o: cxx\n  flags = -DK=2\n  headroom_mem = 3G\n"
                 "build all: phony a.o b.o\n",
                 starts_remote, starts_remote, memory, 2);
    return runner_.max_running;
  }

  std::string ClassKey() const { return JobClassKey("cxx", "distcc g++ -O2 -c a.o"); }

  memory_test::FakeRoot fake_;
  State state_;
  VirtualFileSystem fs_;
  MeasuringRunner runner_{&fs_};
  ManualClock clock_;
  BuildLog log_;
  DepsLog deps_log_;
  HistoryStore history_;
  fakes::NullStatus status_;
  BuildTimeline timeline_;
};

TEST_F(ExecModeHistoryTest, ARemoteJobIsEstimatedFromTheResidualAndLearnedUnderTheRemoteKey) {
  runner_.max_rss_kb = 20 * 1024;
  Build(/*starts_remote=*/true, /*ran_remote=*/true);
  const auto& jobs = timeline_.jobs();
  ASSERT_EQ(2u, jobs.size());
  EXPECT_EQ(40 * kMiB, jobs[0].estimate_bytes);  // the farm's residual, not a local g++ -O2 prior
  EXPECT_EQ("prior", jobs[0].estimate_source);
  EXPECT_EQ("class history", jobs[1].estimate_source);  // what a.o taught the remote class
  EXPECT_NE(nullptr, history_.FindClass(ExecModeKey(ClassKey(), ExecMode::kRemote)));
  EXPECT_EQ(nullptr, history_.FindClass(ClassKey()));
}

TEST_F(ExecModeHistoryTest, AJobThatFellBackIsLearnedUnderTheLocalKey) {
  runner_.max_rss_kb = 300 * 1024;
  Build(/*starts_remote=*/true, /*ran_remote=*/false);
  EXPECT_NE(nullptr, history_.FindClass(ClassKey()));
  EXPECT_EQ(nullptr, history_.FindClass(ExecModeKey(ClassKey(), ExecMode::kRemote)));
}

// Long compiles start only while a CPU is free of them (AdmissionConfig::cpus), but one sent to a compile farm runs
// on the farm's CPUs: -j set to a farm's size must still start that many remote compiles.
TEST_F(ExecModeHistoryTest, ARemoteCompileTakesNoLocalCpu) {
  EXPECT_EQ(2u, MostAtOnceOnOneCpu(/*starts_remote=*/true));
}

TEST_F(ExecModeHistoryTest, TwoLocalLongCompilesOnOneCpuRunOneAtATime) {
  EXPECT_EQ(1u, MostAtOnceOnOneCpu(/*starts_remote=*/false));
}

}  // namespace
}  // namespace headroom
