// MemoryController's jobserver slots (docs/jobserver.md) inside the real Builder with fakes: a slot is
// offered only while memory covers what running jobs owe, the slots already charged, the reserve and
// one more slot at the job's estimate; none while the machine is too small.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "fakes.h"
#include "headroom/admission/memory_controller.h"
#include "headroom/util/byte_size.h"
#include "headroom/build/builder.h"
#include "headroom/estimator/estimator.h"
#include "headroom/exec/jobserver_server.h"
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

class SilentStatus : public fakes::NullStatus {
 public:

};

// The controller under test, recording the most slots granted at once while every job of the build ran
// (the fake runner ends jobs one at a time; a job left alone may rightly get more afterwards).
class RecordingMemoryController : public MemoryController {
 public:
  using MemoryController::MemoryController;
  void JobStarted(Edge* edge, JobId id, ProcessRunner* runner) override {
    MemoryController::JobStarted(edge, id, runner);
    slots[id] = 0;
  }
  bool JobFinished(Edge* edge, JobExit* exit) override {
    slots.erase(exit->id);
    ended = true;
    return MemoryController::JobFinished(edge, exit);
  }
  void SlotsChanged(Edge* edge, JobId id, size_t now) override {
    MemoryController::SlotsChanged(edge, id, now);
    if (ended) return;
    slots[id] = now;
    size_t total = 0;
    for (const auto& [job, held] : slots) total += held;
    most_at_once = std::max(most_at_once, total);
  }
  std::map<JobId, size_t> slots;
  size_t most_at_once = 0;
  bool ended = false;
};

class MemoryControllerSlotsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/headroom_slots_XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(dir));
    temp_ = dir;
  }
  void TearDown() override { std::filesystem::remove_all(temp_); }

  // Runs `jobs` edges hinted at `hint` on a machine of `total` bytes at -j`parallelism` with a jobserver;
  // returns the most slots offered at once while all of them ran.
  size_t SlotsWhileAllRun(uint64_t total, int jobs, const std::string& hint, int parallelism) {
    return SlotsWhileAllRun(total, std::vector<std::string>(static_cast<size_t>(jobs), hint), parallelism);
  }
  size_t SlotsWhileAllRun(uint64_t total, const std::vector<std::string>& hints, int parallelism) {
    fake_.WriteQuietMachine(total);
    std::string manifest = "rule touch\n  command = touch $out\n";
    std::string all = "build all: phony";
    for (size_t i = 0; i < hints.size(); ++i) {
      manifest += fmt::format("build o{}: touch\n  headroom_mem = {}\n", i, hints[i]);
      all += fmt::format(" o{}", i);
    }
    State state;
    fakes::VirtualFileSystem fs;
    ManifestParser parser(&state, &fs);
    std::string err;
    EXPECT_TRUE(parser.ParseTest(manifest + all + "\n", &err)) << err;

    MemoryProbe probe(memory_test::FakeProbeOptions(fake_, &clock_));
    JobMeter meter(std::unique_ptr<JobCgroups>(), memory_test::FakeMeterOptions(fake_, /*use_cgroups=*/false));
    HistoryStore history;
    Estimator estimator(&history, {});
    BuildLog log;
    DepsLog deps_log;
    SilentStatus status;
    MemoryConfig memory;
    RecordingMemoryController controller({&probe, &meter, &estimator, &log, &status, &clock_}, memory, false);
    auto server = JobserverServer::Create(JobserverStyle::kFifo, parallelism, temp_, "", &err);
    EXPECT_TRUE(server) << err;

    BuildConfig config;
    config.parallelism = parallelism;
    fakes::FakeProcessRunner runner(&fs);
    Builder builder(&state, config, &log, &deps_log, &fs, &status, &clock_);
    builder.set_runner(&runner);
    builder.set_job_controller(&controller);
    builder.set_jobserver_server(server.get());
    EXPECT_TRUE(builder.AddTarget("all", &err)) << err;
    EXPECT_EQ(BuildResult::kSucceeded, builder.Build(&err)) << err;
    return controller.most_at_once;
  }

  memory_test::FakeRoot fake_;
  fakes::ManualClock clock_;
  std::string temp_;
};

TEST_F(MemoryControllerSlotsTest, SlotsGoOnlyWhereMemoryCoversThem) {
  // Two 1.5 GiB jobs (below the heavy threshold, so they start together) owe 3 GiB; the reserve is 0.5 GiB.
  // 8 GiB: a slot each (3 + 1.5 + 1.5 + 0.5 <= 8). 5.5 GiB: one (3 + 1.5 + 0.5 fits, a second does not). 4 GiB:
  // none (3 + 0.5 + 1.5 > 4), though both jobs run.
  EXPECT_EQ(2u, SlotsWhileAllRun(8 * kGiB, 2, "1536M", 4));
  EXPECT_EQ(1u, SlotsWhileAllRun(11 * kGiB / 2, 2, "1536M", 4));
  EXPECT_EQ(0u, SlotsWhileAllRun(4 * kGiB, 2, "1536M", 4));
}

TEST_F(MemoryControllerSlotsTest, AJobWaitingForMemoryComesBeforeSlots) {
  // 8 GiB, reserve 0.5: o0 (1.5 GiB) runs and would get a slot (1.5 + 1.5 + 0.5 <= 8), but o1 (6.5 GiB) waits
  // for memory, and a slot would take what it needs.
  EXPECT_EQ(1u, SlotsWhileAllRun(8 * kGiB, {"1536M"}, 4));
  EXPECT_EQ(0u, SlotsWhileAllRun(8 * kGiB, {"1536M", "6656M"}, 4));
}

TEST_F(MemoryControllerSlotsTest, TheCpuCapComesFirst) {
  // Plenty of memory, but -j2 with two jobs running leaves nothing to offer.
  EXPECT_EQ(0u, SlotsWhileAllRun(64 * kGiB, 2, "1G", 2));
  EXPECT_EQ(1u, SlotsWhileAllRun(64 * kGiB, 2, "1G", 3));
}

}  // namespace
}  // namespace headroom
