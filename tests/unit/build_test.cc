// Whole builds in memory: dirty scan, plan order, builder behaviour (restat, -k, dry run, rsp
// files, interrupts, the JobController seam) against fake file system and process runner.
#include <gtest/gtest.h>

#include "fakes.h"
#include "headroom/build/builder.h"
#include "headroom/logs/build_log.h"
#include "headroom/logs/deps_log.h"
#include "headroom/manifest/manifest_parser.h"
#include "headroom/status/status.h"

namespace headroom {
namespace {

using fakes::FakeProcessRunner;
using fakes::ManualClock;
using fakes::VirtualFileSystem;

class RecordingStatus : public fakes::NullStatus {
 public:
  void PlanHasTotalEdges(int total) override { totals.push_back(total); }
  void EdgeAddedToPlan(const Edge*, int64_t) override { totals.push_back(++total); }
  void EdgeRemovedFromPlan(const Edge*) override { totals.push_back(--total); }
  int total = 0;
  void BuildEdgeStarted(const Edge* edge, int64_t) override { started.push_back(edge->outputs[0]->path); }
  void BuildEdgeFinished(Edge* edge, int64_t, int64_t, bool success, int exit_code,
                         const std::string& output) override {
    finished.push_back(edge->outputs[0]->path + (success ? "" : ":failed=" + std::to_string(exit_code)));
    outputs.push_back(output);
  }
  void Info(const std::string& message) override { infos.push_back(message); }
  void Warning(const std::string& message) override { warnings.push_back(message); }
  void Error(const std::string& message) override { errors.push_back(message); }

  std::vector<int> totals;
  std::vector<std::string> started, finished, outputs, infos, warnings, errors;
};

class BuildTest : public ::testing::Test {
 protected:
  void Parse(const std::string& manifest) {
    ManifestParser parser(&state_, &fs_);
    std::string err;
    ASSERT_TRUE(parser.ParseTest(manifest, &err)) << err;
  }

  std::unique_ptr<Builder> MakeBuilder() {
    auto builder = std::make_unique<Builder>(&state_, config_, &log_, &deps_log_, &fs_, &status_, &clock_,
                                             &explanations_);
    builder->set_runner(&runner_);
    return builder;
  }

  // Builds `target` from scratch (fresh scan state); returns the result and keeps the error.
  BuildResult Build(const std::string& target, std::string* err) {
    state_.Reset();
    auto builder = MakeBuilder();
    if (!builder->AddTarget(target, err)) {
      if (!err->empty()) return BuildResult::kFailed;
    }
    if (builder->AlreadyUpToDate()) return BuildResult::kSucceeded;
    BuildResult result = builder->Build(err);
    last_exit_code_ = builder->failure_exit_code();
    return result;
  }

  std::vector<std::string> RunAndCollect(const std::string& target) {
    runner_.commands_run.clear();
    std::string err;
    EXPECT_EQ(BuildResult::kSucceeded, Build(target, &err)) << err;
    return runner_.commands_run;
  }

  State state_;
  VirtualFileSystem fs_;
  FakeProcessRunner runner_{&fs_};
  ManualClock clock_;
  BuildConfig config_;
  BuildLog log_;
  DepsLog deps_log_;
  RecordingStatus status_;
  Explanations explanations_;
  int last_exit_code_ = 0;
};

TEST_F(BuildTest, BuildsMissingOutputsInDependencyOrder) {
  Parse(
      "rule touch\n  command = touch $out\n"
      "build mid: touch in\n"
      "build out: touch mid\n");
  fs_.Create("in");
  EXPECT_EQ((std::vector<std::string>{"touch mid", "touch out"}), RunAndCollect("out"));
  EXPECT_TRUE(fs_.Exists("out"));
}

TEST_F(BuildTest, LongestChainStartsFirstThenManifestOrder) {
  // Critical-path weights (plan/critical_path.h): a1 3, a2 2, b and a3 1, the phony 0. With -j1 the chain
  // runs first although b comes first in the manifest; b ties with a3 and is older, so it runs before it.
  Parse(
      "rule touch\n  command = touch $out\n"
      "build b: touch\n"
      "build a1: touch\n"
      "build a2: touch a1\n"
      "build a3: touch a2\n"
      "build all: phony b a3\n");
  EXPECT_EQ((std::vector<std::string>{"touch a1", "touch a2", "touch b", "touch a3"}), RunAndCollect("all"));
}

TEST_F(BuildTest, SecondBuildIsNoOpAndEditRebuildsOnlyDependents) {
  Parse(
      "rule touch\n  command = touch $out\n"
      "build a: touch a.in\n"
      "build b: touch b.in\n"
      "build all: touch a b\n");
  fs_.Create("a.in");
  fs_.Create("b.in");
  RunAndCollect("all");
  EXPECT_TRUE(RunAndCollect("all").empty());
  fs_.Create("b.in");  // newer now
  EXPECT_EQ((std::vector<std::string>{"touch b", "touch all"}), RunAndCollect("all"));
}

TEST_F(BuildTest, CommandChangeRebuildsButGeneratorDoesNot) {
  Parse(
      "rule touch\n  command = touch $out $flag\n"
      "rule gen\n  command = touch $out $flag\n  generator = 1\n"
      "build a: touch in\n  flag = one\n"
      "build g: gen in\n  flag = one\n");
  fs_.Create("in");
  RunAndCollect("a");
  RunAndCollect("g");
  state_.edges[0]->env->AddBinding("flag", "two");
  state_.edges[1]->env->AddBinding("flag", "two");
  EXPECT_EQ((std::vector<std::string>{"touch a two"}), RunAndCollect("a"));
  EXPECT_TRUE(RunAndCollect("g").empty());
}

TEST_F(BuildTest, OrderOnlyInputsOrderButNeverDirty) {
  Parse(
      "rule touch\n  command = touch $out\n"
      "build gen.h: touch gen.in\n"
      "build out: touch src || gen.h\n");
  fs_.Create("gen.in");
  fs_.Create("src");
  EXPECT_EQ((std::vector<std::string>{"touch gen.h", "touch out"}), RunAndCollect("out"));
  fs_.Create("gen.in");
  // gen.h rebuilds, but out only ordered after it: not rebuilt.
  EXPECT_EQ((std::vector<std::string>{"touch gen.h"}), RunAndCollect("out"));
}

TEST_F(BuildTest, MissingInputWithoutRuleIsAnError) {
  Parse("rule touch\n  command = touch $out\nbuild out: touch nowhere\n");
  std::string err;
  EXPECT_EQ(BuildResult::kFailed, Build("out", &err));
  EXPECT_EQ("'nowhere', needed by 'out', missing and no known rule to make it", err);
}

TEST_F(BuildTest, DependencyCycleIsReported) {
  Parse("rule touch\n  command = touch $out\nbuild a: touch b\nbuild b: touch c\nbuild c: touch a\n");
  std::string err;
  EXPECT_EQ(BuildResult::kFailed, Build("a", &err));
  EXPECT_EQ("dependency cycle: a -> b -> c -> a", err);
}

TEST_F(BuildTest, PhonyWithoutInputsAlwaysDirtyButRunsNothing) {
  Parse("rule touch\n  command = touch $out\nbuild always: phony\nbuild out: touch always\n");
  EXPECT_EQ((std::vector<std::string>{"touch out"}), RunAndCollect("out"));
  EXPECT_EQ((std::vector<std::string>{"touch out"}), RunAndCollect("out"));
}

TEST_F(BuildTest, PhonyAliasPropagatesNewestInputTime) {
  Parse(
      "rule touch\n  command = touch $out\n"
      "build alias: phony in1 in2\n"
      "build out: touch alias\n");
  fs_.Create("in1");
  fs_.Create("in2");
  RunAndCollect("out");
  EXPECT_TRUE(RunAndCollect("out").empty());
  fs_.Create("in1");
  EXPECT_EQ((std::vector<std::string>{"touch out"}), RunAndCollect("out"));
}

TEST_F(BuildTest, RestatCleansDependentsWhenOutputUnchanged) {
  Parse(
      "rule keep\n  command = keep $out\n  restat = 1\n"
      "rule touch\n  command = touch $out\n"
      "build mid: keep in\n"
      "build out: touch mid\n");
  fs_.Create("in");
  fs_.Create("mid");
  fs_.Create("out");
  // No log entries: both edges dirty. `keep` leaves mid alone, so out is cleaned... but out has
  // no log entry either, so it still runs once.
  RunAndCollect("out");
  fs_.Create("in");
  status_.totals.clear();
  status_.total = 0;
  EXPECT_EQ((std::vector<std::string>{"keep mid"}), RunAndCollect("out"));
  // %t shrinks when restat removes work from the plan.
  EXPECT_EQ((std::vector<int>{1, 2, 1}), status_.totals);
}

TEST_F(BuildTest, FailureStopsBuildWithJobExitCode) {
  Parse(
      "rule run\n  command = $cmd\n"
      "build a: run\n  cmd = exit 3\n"
      "build b: run\n  cmd = touch b\n"
      "build all: phony a b\n");
  config_.parallelism = 1;
  std::string err;
  EXPECT_EQ(BuildResult::kFailed, Build("all", &err));
  EXPECT_EQ("subcommand failed", err);
  EXPECT_EQ(3, last_exit_code_);
  EXPECT_EQ(1u, runner_.commands_run.size());
}

TEST_F(BuildTest, KeepGoingRunsIndependentWork) {
  Parse(
      "rule run\n  command = $cmd\n"
      "build a: run\n  cmd = fail\n"
      "build b: run\n  cmd = touch b\n"
      "build c: run a\n  cmd = touch c\n"
      "build all: phony b c\n");
  config_.parallelism = 1;
  config_.failures_allowed = 100;
  std::string err;
  EXPECT_EQ(BuildResult::kFailed, Build("all", &err));
  EXPECT_EQ("cannot make progress due to previous errors", err);
  EXPECT_TRUE(fs_.Exists("b"));
  EXPECT_FALSE(fs_.Exists("c"));
}

TEST_F(BuildTest, DryRunRunsNothing) {
  Parse("rule touch\n  command = touch $out\nbuild out: touch in\n");
  fs_.Create("in");
  config_.dry_run = true;
  std::string err;
  EXPECT_EQ(BuildResult::kSucceeded, Build("out", &err)) << err;
  EXPECT_TRUE(runner_.commands_run.empty());
  EXPECT_EQ((std::vector<std::string>{"out"}), status_.finished);
  EXPECT_FALSE(fs_.Exists("out"));
}

// A dry run starts all that is ready at once and finishes the exits in chunks: thousands of ready edges
// across chunk boundaries, and what depends on them, still finish each exactly once, in start order.
TEST_F(BuildTest, DryRunOfThousandsOfReadyEdgesFinishesEachOnceInOrder) {
  std::string manifest = "rule touch\n  command = touch $out\n";
  std::string all;
  for (int i = 0; i < 2500; ++i) {
    manifest += "build o" + std::to_string(i) + ": touch in\n";
    all += " o" + std::to_string(i);
  }
  manifest += "build link: touch" + all + "\n";
  Parse(manifest);
  fs_.Create("in");
  config_.dry_run = true;
  config_.parallelism = 4;
  std::string err;
  EXPECT_EQ(BuildResult::kSucceeded, Build("link", &err)) << err;
  EXPECT_TRUE(runner_.commands_run.empty());
  ASSERT_EQ(2501u, status_.finished.size());
  EXPECT_EQ(status_.started, status_.finished);
  EXPECT_EQ("link", status_.finished.back());
}

TEST_F(BuildTest, RspfileWrittenBeforeAndRemovedAfterSuccess) {
  Parse(
      "rule link\n  command = touch $out\n  rspfile = $out.rsp\n  rspfile_content = $in\n"
      "build out: link a b\n");
  fs_.Create("a");
  fs_.Create("b");
  RunAndCollect("out");
  EXPECT_FALSE(fs_.Exists("out.rsp"));
  EXPECT_EQ(1u, fs_.files_removed_.count("out.rsp"));
}

TEST_F(BuildTest, RspfileKeptOnFailure) {
  Parse("rule link\n  command = fail\n  rspfile = out.rsp\n  rspfile_content = $in\nbuild out: link a\n");
  fs_.Create("a");
  std::string err;
  EXPECT_EQ(BuildResult::kFailed, Build("out", &err));
  ASSERT_TRUE(fs_.Exists("out.rsp"));
  EXPECT_EQ("a", fs_.Contents("out.rsp"));
}

TEST_F(BuildTest, OutputAndDepfileDirectoriesCreated) {
  Parse("rule touch\n  command = touch $out\n  depfile = deps/$out.d\nbuild sub/dir/out: touch in\n");
  fs_.Create("in");
  RunAndCollect("sub/dir/out");
  EXPECT_TRUE(fs_.dirs_.count("sub/dir"));
  EXPECT_TRUE(fs_.dirs_.count("deps/sub/dir"));
}

TEST_F(BuildTest, DepfileDiscoversHeaders) {
  Parse("rule cc\n  command = touch $out\n  depfile = $out.d\nbuild a.o: cc a.c\n");
  fs_.Create("a.c");
  fs_.Create("a.h");
  RunAndCollect("a.o");
  fs_.Create("a.o.d", "a.o: a.c a.h\n");
  fs_.Create("a.o");
  EXPECT_TRUE(RunAndCollect("a.o").empty());
  fs_.Create("a.h");
  EXPECT_EQ((std::vector<std::string>{"touch a.o"}), RunAndCollect("a.o"));
}

TEST_F(BuildTest, DepfileNamingUndeclaredOutputIsAnError) {
  Parse("rule cc\n  command = touch $out\n  depfile = $out.d\nbuild a.o: cc a.c\n");
  fs_.Create("a.c");
  fs_.Create("a.o.d", "a.o: a.c\nother.o: x.h\n");
  std::string err;
  EXPECT_EQ(BuildResult::kFailed, Build("a.o", &err));
  EXPECT_EQ("a.o.d: depfile mentions 'other.o' as an output, but no such output was declared", err);
}

TEST_F(BuildTest, DepsGccRecordsIntoDepsLogAndRemovesDepfile) {
  // The fake compiler only touches a.o; the depfile it "wrote" is put in place beforehand.
  Parse("rule cc\n  command = touch $out\n  depfile = $out.d\n  deps = gcc\nbuild a.o: cc a.c\n");
  fs_.Create("a.c");
  fs_.Create("a.h");
  fs_.Create("a.o.d", "a.o: a.c a.h\n");
  RunAndCollect("a.o");
  DepsLog::Deps* deps = deps_log_.GetDeps(state_.LookupNode("a.o"));
  ASSERT_NE(nullptr, deps);
  ASSERT_EQ(2u, deps->nodes.size());
  EXPECT_EQ("a.c", deps->nodes[0]->path);
  EXPECT_EQ("a.h", deps->nodes[1]->path);
  EXPECT_FALSE(fs_.Exists("a.o.d"));
  // The recorded deps make the next run clean, and a header edit dirty.
  EXPECT_TRUE(RunAndCollect("a.o").empty());
  fs_.Create("a.h");
  EXPECT_EQ((std::vector<std::string>{"touch a.o"}), RunAndCollect("a.o"));
}

TEST_F(BuildTest, MissingDepsLogEntryMakesEdgeDirty) {
  Parse("rule cc\n  command = touch $out\n  depfile = $out.d\n  deps = gcc\nbuild a.o: cc a.c\n");
  fs_.Create("a.c");
  fs_.Create("a.o");
  state_.Reset();
  std::string err;
  auto builder = MakeBuilder();
  ASSERT_TRUE(builder->AddTarget("a.o", &err)) << err;
  EXPECT_FALSE(builder->AlreadyUpToDate());
  std::vector<std::string> why;
  explanations_.LookupAndAppend(state_.LookupNode("a.o"), &why);
  ASSERT_FALSE(why.empty());
  EXPECT_EQ("deps for 'a.o' are missing", why[0]);
}

TEST_F(BuildTest, ParallelismCapsConcurrentJobs) {
  std::string manifest = "rule touch\n  command = touch $out\n";
  std::string all = "build all: phony";
  for (int i = 0; i < 10; ++i) {
    manifest += "build o" + std::to_string(i) + ": touch\n";
    all += " o" + std::to_string(i);
  }
  Parse(manifest + all + "\n");
  config_.parallelism = 3;
  RunAndCollect("all");
  EXPECT_EQ(3u, runner_.max_running);
}

TEST_F(BuildTest, PoolDepthLimitsItsEdges) {
  std::string manifest = "pool link\n  depth = 1\nrule touch\n  command = touch $out\n  pool = link\n";
  std::string all = "build all: phony";
  for (int i = 0; i < 4; ++i) {
    manifest += "build o" + std::to_string(i) + ": touch\n";
    all += " o" + std::to_string(i);
  }
  Parse(manifest + all + "\n");
  config_.parallelism = 8;
  RunAndCollect("all");
  EXPECT_EQ(1u, runner_.max_running);
}

TEST_F(BuildTest, CriticalPathFirstThenManifestOrderOnTies) {
  Parse(
      "rule touch\n  command = touch $out\n"
      "build short: touch\n"
      "build deep1: touch\n"
      "build deep2: touch deep1\n"
      "build deep3: touch deep2\n"
      "build all: phony short deep3\n");
  config_.parallelism = 1;
  // deep1 (weight 3) and deep2 (2) lead; then deep3 and short tie at 1 and manifest order wins,
  // exactly as ninja 1.13.2 orders them.
  EXPECT_EQ((std::vector<std::string>{"touch deep1", "touch deep2", "touch short", "touch deep3"}),
            RunAndCollect("all"));
}

class DenyAllButProgress : public JobController {
 public:
  bool MayStart(Edge* edge, size_t running) override {
    ++asked;
    return running == 0;  // one at a time, like a tight memory budget
  }
  int asked = 0;
};

TEST_F(BuildTest, JobControllerCanHoldJobsBackButProgressContinues) {
  std::string manifest = "rule touch\n  command = touch $out\n";
  std::string all = "build all: phony";
  for (int i = 0; i < 5; ++i) {
    manifest += "build o" + std::to_string(i) + ": touch\n";
    all += " o" + std::to_string(i);
  }
  Parse(manifest + all + "\n");
  config_.parallelism = 8;
  DenyAllButProgress controller;
  state_.Reset();
  std::string err;
  auto builder = MakeBuilder();
  builder->set_job_controller(&controller);
  ASSERT_TRUE(builder->AddTarget("all", &err)) << err;
  ASSERT_EQ(BuildResult::kSucceeded, builder->Build(&err)) << err;
  EXPECT_EQ(1u, runner_.max_running);
  EXPECT_EQ(5u, runner_.commands_run.size());
  EXPECT_GT(controller.asked, 5);
}

class RequeueOnce : public JobController {
 public:
  bool JobFinished(Edge* edge, JobExit* exit) override { return requeues++ == 0; }
  int requeues = 0;
};

TEST_F(BuildTest, RequeuedJobRunsAgain) {
  Parse("rule touch\n  command = touch $out\nbuild out: touch\n");
  RequeueOnce controller;
  state_.Reset();
  std::string err;
  auto builder = MakeBuilder();
  builder->set_job_controller(&controller);
  ASSERT_TRUE(builder->AddTarget("out", &err));
  ASSERT_EQ(BuildResult::kSucceeded, builder->Build(&err)) << err;
  EXPECT_EQ((std::vector<std::string>{"touch out", "touch out"}), runner_.commands_run);
  EXPECT_EQ(1u, status_.finished.size());
}

TEST_F(BuildTest, InterruptAbortsJobsAndRemovesTouchedOutputs) {
  Parse(
      "rule touch\n  command = touch $out\n"
      "rule cc\n  command = cc\n  depfile = $out.d\n"
      "build a: touch\n"
      "build b.o: cc\n"
      "build all: phony a b.o\n");
  fs_.Create("b.o");
  fs_.Create("b.o.d", "b.o: \n");
  config_.parallelism = 4;
  runner_.interrupt_after_starts = 2;
  std::string err;
  EXPECT_EQ(BuildResult::kInterrupted, Build("all", &err));
  EXPECT_EQ("interrupted by user", err);
  EXPECT_EQ(2, runner_.aborted_with);
  // An output with a depfile is never trusted after an interrupt; so is its depfile.
  EXPECT_FALSE(fs_.Exists("b.o"));
  EXPECT_FALSE(fs_.Exists("b.o.d"));
}

TEST_F(BuildTest, ValidationsAreBuiltAlongsideTarget) {
  Parse(
      "rule touch\n  command = touch $out\n"
      "build out: touch in |@ check\n"
      "build check: touch in\n");
  fs_.Create("in");
  auto commands = RunAndCollect("out");
  std::sort(commands.begin(), commands.end());
  EXPECT_EQ((std::vector<std::string>{"touch check", "touch out"}), commands);
}

TEST_F(BuildTest, DyndepFileLoadedBeforeScanAddsImplicitInputs) {
  Parse(
      "rule touch\n  command = touch $out\n"
      "build out: touch in || dd\n  dyndep = dd\n");
  fs_.Create("in");
  fs_.Create("extra");
  fs_.Create("dd", "ninja_dyndep_version = 1\nbuild out: dyndep | extra\n");
  RunAndCollect("out");
  EXPECT_TRUE(RunAndCollect("out").empty());
  fs_.Create("extra");
  EXPECT_EQ((std::vector<std::string>{"touch out"}), RunAndCollect("out"));
}

TEST_F(BuildTest, DyndepFileBuiltDuringBuildIsLoadedMidBuild) {
  // `mkdd` produces the dyndep file, which adds `gen` as an input of `out`; `gen` must then be
  // built before `out` although the manifest does not say so.
  Parse(
      "rule touch\n  command = touch $out\n"
      "rule mkdd\n  command = mkdd\n"
      "build dd: mkdd\n"
      "build gen: touch\n"
      "build out: touch in || dd\n  dyndep = dd\n");
  fs_.Create("in");
  state_.Reset();
  std::string err;
  auto builder = MakeBuilder();
  ASSERT_TRUE(builder->AddTarget("out", &err)) << err;
  // What `mkdd` would write; an mtime of 0 reads as missing, so its edge still has to run first.
  fs_.Create("dd", "ninja_dyndep_version = 1\nbuild out: dyndep | gen\n");
  fs_.files_["dd"].mtime = 0;
  ASSERT_EQ(BuildResult::kSucceeded, builder->Build(&err)) << err;
  auto& run = runner_.commands_run;
  auto gen = std::find(run.begin(), run.end(), "touch gen");
  auto out = std::find(run.begin(), run.end(), "touch out");
  ASSERT_NE(run.end(), gen);
  ASSERT_NE(run.end(), out);
  EXPECT_LT(gen, out);
}

}  // namespace
}  // namespace headroom
