// RemoteController: the remote pool bounds remote-eligible jobs, the local cap bounds the rest, a remote job that
// grows past its residual is seen falling back (farm suspect until a job completes remote), a launcher's farm
// failure is retried here once (not with --strict-remote), memory stays the inner controller's.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "headroom/admission/remote_controller.h"
#include "headroom/graph/graph.h"
#include "headroom/manifest/manifest_parser.h"
#include "headroom/report/timeline.h"
#include "headroom/status/status.h"
#include "headroom/util/byte_size.h"
#include "fakes.h"

namespace headroom {
namespace {

using fakes::ManualClock;
using fakes::VirtualFileSystem;

class RecordingStatus : public fakes::NullStatus {
 public:
  void Warning(const std::string& message) override { warnings.push_back(message); }
  std::vector<std::string> warnings;
};

// The memory controller's stand-in: admits whatever `admit` says and counts calls.
class FakeInner : public JobController {
 public:
  bool MayStart(Edge*, size_t) override { return admit; }
  void JobStarted(Edge*, JobId, ProcessRunner*) override { ++started; }
  bool JobFinished(Edge* edge, JobExit*) override {
    ++finished;
    if (on_finished) on_finished(edge);
    return false;
  }
  void Tick(ProcessRunner*) override { ++ticks; }
  bool admit = true;
  int started = 0, finished = 0, ticks = 0;
  std::function<void(Edge*)> on_finished;  // runs inside JobFinished, where the memory controller learns
};

class RemoteControllerTest : public ::testing::Test {
 protected:
  void Parse(const std::string& manifest) {
    ManifestParser parser(&state_, &fs_);
    std::string err;
    ASSERT_TRUE(parser.ParseTest(manifest, &err)) << err;
  }
  Edge* EdgeOf(const std::string& output) { return state_.LookupNode(output)->in_edge; }
  std::unique_ptr<RemoteController> Make(size_t depth, size_t local_cap, bool strict_remote = false) {
    RemoteConfig config;
    config.strict_remote = strict_remote;
    config.pool_depth = depth;
    config.local_cap = local_cap;
    config.default_residual_bytes = 64 * kMiB;
    JobSizes sizes{[this](JobId id) { return current_[id]; }, [this](JobId id) { return peak_[id]; }};
    return std::make_unique<RemoteController>(&inner_, sizes, &status_, config);
  }
  // Starts `output`'s edge as job `id` when the controller admits it.
  bool Start(RemoteController& controller, const std::string& output, JobId id) {
    Edge* edge = EdgeOf(output);
    if (!controller.MayStart(edge, 0)) return false;
    controller.JobStarted(edge, id, nullptr);
    return true;
  }
  // Returns whether the controller requeues the edge.
  bool Finish(RemoteController& controller, const std::string& output, JobId id, uint64_t peak, int code = 0) {
    peak_[id] = peak;
    JobExit exit;
    exit.id = id;
    exit.exited_normally = true;
    exit.exit_code = code;
    return controller.JobFinished(EdgeOf(output), &exit);
  }

  State state_;
  VirtualFileSystem fs_;
  FakeInner inner_;
  RecordingStatus status_;
  std::map<JobId, uint64_t> current_, peak_;
};

constexpr const char* kProject =
    "rule cxx\n  command = distcc g++ -c $in -o $out\n"
    "rule link\n  command = g++ $in -o $out\n"
    "build a.o: cxx a.cc\nbuild b.o: cxx b.cc\nbuild c.o: cxx c.cc\nbuild d.o: cxx d.cc\n"
    "build app: link a.o b.o c.o d.o\nbuild tool: link a.o\nbuild forced.o: cxx f.cc\n  headroom_exec = local\n";

TEST_F(RemoteControllerTest, ThePoolBoundsRemoteJobsAndTheLocalCapTheOthers) {
  Parse(kProject);
  auto controller = Make(/*depth=*/2, /*local_cap=*/1);
  EXPECT_TRUE(Start(*controller, "a.o", 1));
  EXPECT_TRUE(Start(*controller, "b.o", 2));
  EXPECT_FALSE(Start(*controller, "c.o", 3));  // the farm's two slots are taken
  EXPECT_TRUE(Start(*controller, "app", 4));   // local: the cap has room
  EXPECT_FALSE(Start(*controller, "tool", 5));  // local cap of 1 reached
  EXPECT_FALSE(Start(*controller, "forced.o", 6));  // headroom_exec = local counts as local
  Finish(*controller, "a.o", 1, 30 * kMiB);
  EXPECT_TRUE(Start(*controller, "c.o", 3));
  EXPECT_EQ(4, inner_.started);  // a.o, b.o, app, c.o
  EXPECT_EQ(1u, controller->counts().remote);
  EXPECT_EQ(1u, controller->counts().local);
}

// Like the memory controller's walk, the pool's stops looking down the ready queue after 256 refusals, so a build
// with thousands of ready remote-eligible edges keeps no class for each of them while the pool is full.
TEST_F(RemoteControllerTest, AWalkStopsAfterAWindowOfRefusedEdges) {
  std::string manifest = "rule cxx\n  command = distcc g++ -c $in -o $out\nrule link\n  command = g++ $in -o $out\n";
  for (int i = 0; i < 300; ++i) manifest += "build o" + std::to_string(i) + ".o: cxx s" + std::to_string(i) + ".cc\n";
  manifest += "build app: link main.cc\n";
  Parse(manifest);
  auto controller = Make(/*depth=*/2, /*local_cap=*/8);
  controller->BeginPass();
  int admitted = 0;
  for (int i = 0; i < 300; ++i) admitted += Start(*controller, "o" + std::to_string(i) + ".o", i + 1) ? 1 : 0;
  EXPECT_EQ(2, admitted);
  EXPECT_FALSE(Start(*controller, "app", 400));  // 298 refusals: this walk looks no further
  controller->BeginPass();
  EXPECT_TRUE(Start(*controller, "app", 400));   // the next walk finds it
}

TEST_F(RemoteControllerTest, TheStatusLineShowsThePoolOnceAJobCanUseIt) {
  Parse(kProject);
  auto controller = Make(/*depth=*/2, /*local_cap=*/4);
  MemoryStatus status;
  controller->FillStatus(&status);
  EXPECT_EQ(0, status.remote_slots);  // a host list alone is no farm in use
  EXPECT_TRUE(Start(*controller, "a.o", 1));
  controller->FillStatus(&status);
  EXPECT_EQ(1, status.remote_running);
  EXPECT_EQ(2, status.remote_slots);
}

TEST_F(RemoteControllerTest, MemoryAdmissionStillDecides) {
  Parse(kProject);
  auto controller = Make(4, 4);
  inner_.admit = false;
  EXPECT_FALSE(Start(*controller, "a.o", 1));
  EXPECT_FALSE(Start(*controller, "app", 2));
  EXPECT_EQ(0, inner_.started);
}

TEST_F(RemoteControllerTest, AFallbackIsSeenAndRemoteJobsCountAsLocalUntilOneCompletesRemote) {
  Parse(kProject);
  auto controller = Make(4, 2);
  ASSERT_TRUE(Start(*controller, "a.o", 1));
  ASSERT_TRUE(Start(*controller, "b.o", 2));
  current_[1] = 40 * kMiB;
  current_[2] = 300 * kMiB;  // b.o compiles here: distcc fell back
  controller->Tick(nullptr);
  EXPECT_EQ(1, inner_.ticks);
  EXPECT_TRUE(controller->farm_suspect());
  EXPECT_EQ(1u, controller->local_running());
  ASSERT_EQ(1u, status_.warnings.size());
  EXPECT_NE(std::string::npos, status_.warnings[0].find("distcc job ran on this machine instead of the farm"));
  controller->Tick(nullptr);
  EXPECT_EQ(1u, status_.warnings.size());  // said once
  // While suspect, a new remote-eligible job is local (a.o still probes the farm): the local cap of 2 applies.
  EXPECT_TRUE(Start(*controller, "c.o", 3));
  EXPECT_FALSE(Start(*controller, "d.o", 4));
  Finish(*controller, "b.o", 2, 310 * kMiB);
  EXPECT_EQ(1u, controller->counts().fell_back);
  Finish(*controller, "a.o", 1, 42 * kMiB);  // the farm completed a job: it is back
  EXPECT_FALSE(controller->farm_suspect());
  EXPECT_EQ(1u, controller->counts().remote);
  EXPECT_TRUE(Start(*controller, "d.o", 4));  // remote again, whatever the local jobs
}

TEST_F(RemoteControllerTest, APeakPastTheResidualAtTheEndIsAFallback) {
  Parse(kProject);
  auto controller = Make(4, 4);
  ASSERT_TRUE(Start(*controller, "a.o", 1));
  Finish(*controller, "a.o", 1, 400 * kMiB);  // grew and finished between two samples
  EXPECT_EQ(1u, controller->counts().fell_back);
  EXPECT_TRUE(controller->farm_suspect());
}

TEST_F(RemoteControllerTest, ASmallJobDistccRanLocallyIsAFallbackByItsOutput) {
  Parse(kProject);
  auto controller = Make(4, 4);
  ASSERT_TRUE(Start(*controller, "a.o", 1));
  peak_[1] = 20 * kMiB;  // too light to tell by memory
  JobExit exit;
  exit.id = 1;
  exit.exited_normally = true;
  exit.output = "distcc[9] Warning: failed to distribute a.cc to 127.0.0.1:3632/4, running locally instead\n";
  controller->JobFinished(EdgeOf("a.o"), &exit);
  EXPECT_EQ(1u, controller->counts().fell_back);
  EXPECT_EQ(0u, controller->counts().remote);
  EXPECT_TRUE(controller->farm_suspect());
  EXPECT_EQ(1u, status_.warnings.size());
}

TEST_F(RemoteControllerTest, FallbacksAreMarkedOnTheTimelineOnce) {
  Parse(kProject);
  auto controller = Make(4, 4);
  BuildTimeline timeline;
  ManualClock clock;
  controller->set_timeline(&timeline, &clock);
  ASSERT_TRUE(Start(*controller, "a.o", 1));
  ASSERT_TRUE(Start(*controller, "b.o", 2));
  current_[2] = 300 * kMiB;
  controller->Tick(nullptr);
  Finish(*controller, "b.o", 2, 310 * kMiB);  // seen already: not marked again
  Finish(*controller, "a.o", 1, 30 * kMiB);   // ran on the farm: not marked
  ASSERT_EQ(1u, timeline.markers().size());
  EXPECT_EQ("remote-fallback", timeline.markers()[0].kind);
  EXPECT_EQ("b.o", timeline.markers()[0].output);
  EXPECT_EQ("distcc ran it here: 300 MiB in use, past its residual's threshold", timeline.markers()[0].detail);
}

TEST_F(RemoteControllerTest, ABadHeadroomExecValueWarnsAndRunsLocal) {
  Parse("rule cxx\n  command = distcc g++ -c $in -o $out\nbuild a.o: cxx a.cc\n  headroom_exec = farm\n");
  auto controller = Make(4, 4);
  EXPECT_TRUE(Start(*controller, "a.o", 1));
  ASSERT_EQ(1u, status_.warnings.size());
  EXPECT_EQ("'a.o': unknown headroom_exec value 'farm' (expected 'remote' or 'local'); running it as local",
            status_.warnings[0]);
  EXPECT_EQ(1u, controller->local_running());
}

TEST_F(RemoteControllerTest, WithoutRemoteEligibleJobsTheLocalCapDoesNotApply) {
  Parse("rule link\n  command = g++ $in -o $out\nbuild x: link a\nbuild y: link b\nbuild z: link c\n");
  auto controller = Make(4, 1);
  EXPECT_TRUE(Start(*controller, "x", 1));
  EXPECT_TRUE(Start(*controller, "y", 2));  // -j alone bounds a build with no farm jobs, as in ninja
  EXPECT_TRUE(Start(*controller, "z", 3));
}

TEST_F(RemoteControllerTest, AFarmFailureExitIsRetriedHereOnceWithTheLaunchersLocalSwitch) {
  Parse(kProject);
  auto controller = Make(/*depth=*/2, /*local_cap=*/1);
  ASSERT_TRUE(Start(*controller, "a.o", 1));
  // distcc 107: the daemon went away (DISTCC_FALLBACK=0 keeps distcc from compiling here itself).
  EXPECT_TRUE(Finish(*controller, "a.o", 1, 20 * kMiB, /*code=*/107));
  EXPECT_EQ(1, inner_.finished);  // memory still sees the attempt end
  EXPECT_EQ(1u, controller->counts().fell_back);
  EXPECT_TRUE(controller->farm_suspect());
  ASSERT_EQ(1u, status_.warnings.size());
  EXPECT_EQ(std::vector<std::string>{"DISTCC_HOSTS=localhost"}, controller->PrepareJob(EdgeOf("a.o")).environment);
  EXPECT_TRUE(controller->PrepareJob(EdgeOf("b.o")).environment.empty());
  // The retry is a local job: it takes the local cap, not a farm slot.
  ASSERT_TRUE(Start(*controller, "a.o", 2));
  EXPECT_EQ(1u, controller->local_running());
  EXPECT_FALSE(Start(*controller, "app", 3));
  // A second farm failure of the retry is the job's own result.
  EXPECT_FALSE(Finish(*controller, "a.o", 2, 300 * kMiB, 107));
  EXPECT_TRUE(controller->PrepareJob(EdgeOf("a.o")).environment.empty());
  EXPECT_EQ(1u, controller->counts().fell_back);
  EXPECT_EQ(0u, controller->counts().local);
}

TEST_F(RemoteControllerTest, AJobCountedLocalWhileTheFarmIsSuspectIsRetriedToo) {
  Parse(kProject);
  auto controller = Make(4, 4);
  ASSERT_TRUE(Start(*controller, "a.o", 1));
  ASSERT_TRUE(Finish(*controller, "a.o", 1, 20 * kMiB, 107));
  ASSERT_TRUE(Start(*controller, "b.o", 2));  // probes the farm
  ASSERT_TRUE(Start(*controller, "c.o", 3));  // counted local, but its command still goes through distcc
  EXPECT_EQ(1u, controller->local_running());
  EXPECT_TRUE(Finish(*controller, "c.o", 3, 20 * kMiB, 107));
  EXPECT_EQ(std::vector<std::string>{"DISTCC_HOSTS=localhost"}, controller->PrepareJob(EdgeOf("c.o")).environment);
}

TEST_F(RemoteControllerTest, TheInnerControllerLearnsWhereEachJobRan) {
  Parse(kProject);
  auto controller = Make(4, 4);
  std::vector<std::string> modes;
  std::vector<bool> remote;
  inner_.on_finished = [&](Edge* edge) {
    modes.push_back(controller->RunMode(edge));
    remote.push_back(controller->RanRemote(edge));
  };
  // Until the farm has completed a job, remote-eligible jobs are estimated as the local compiles they would be
  // with the farm down.
  EXPECT_FALSE(controller->EstimatesRemote(EdgeOf("a.o")));
  ASSERT_TRUE(Start(*controller, "a.o", 1));
  ASSERT_TRUE(Start(*controller, "b.o", 2));
  ASSERT_TRUE(Start(*controller, "app", 3));
  Finish(*controller, "a.o", 1, 30 * kMiB);
  EXPECT_TRUE(controller->EstimatesRemote(EdgeOf("c.o")));
  EXPECT_FALSE(controller->EstimatesRemote(EdgeOf("app")));
  EXPECT_EQ(30 * kMiB, controller->ResidualFor(EdgeOf("c.o")));  // the largest peak completed on the farm
  Finish(*controller, "b.o", 2, 400 * kMiB);  // fell back
  Finish(*controller, "app", 3, 100 * kMiB);
  EXPECT_EQ((std::vector<std::string>{"remote (distcc)", "fell back (distcc)", "local"}), modes);
  EXPECT_EQ((std::vector<bool>{true, false, false}), remote);
  EXPECT_EQ("", controller->RunMode(EdgeOf("a.o")));  // asked outside JobFinished
  // A fallback makes the farm suspect: waiting remote-eligible jobs are estimated as local ones.
  EXPECT_FALSE(controller->EstimatesRemote(EdgeOf("c.o")));
}

TEST_F(RemoteControllerTest, CompileErrorsAndStrictRemoteAreNotRetried) {
  Parse(kProject);
  auto controller = Make(4, 4);
  ASSERT_TRUE(Start(*controller, "a.o", 1));
  EXPECT_FALSE(Finish(*controller, "a.o", 1, 20 * kMiB, /*code=*/1));  // the compiler's own error
  auto strict = Make(4, 4, /*strict_remote=*/true);
  ASSERT_TRUE(Start(*strict, "b.o", 2));
  EXPECT_FALSE(Finish(*strict, "b.o", 2, 20 * kMiB, /*code=*/107));
  EXPECT_TRUE(strict->PrepareJob(EdgeOf("b.o")).environment.empty());
}

}  // namespace
}  // namespace headroom
