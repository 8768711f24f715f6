// --deadline: duration parsing, the start/stop decisions on a fake clock, and whole builds that stop at the
// deadline (logs, exit status, what runs next time) against a runner whose jobs take simulated time.
#include <gtest/gtest.h>

#include <climits>
#include <map>
#include <sstream>

#include "fakes.h"
#include "headroom/build/builder.h"
#include "headroom/build/deadline.h"
#include "headroom/logs/build_log.h"
#include "headroom/logs/deps_log.h"
#include "headroom/manifest/manifest_parser.h"
#include "headroom/util/duration.h"

namespace headroom {
namespace {

using fakes::ManualClock;
using fakes::NullStatus;
using fakes::VirtualFileSystem;

TEST(DurationTest, ParsesHoursMinutesSecondsLargestFirst) {
  std::string err;
  EXPECT_EQ(5 * 3600000 + 30 * 60000, ParseDuration("5h30m", &err));
  EXPECT_EQ(90 * 60000, ParseDuration("90m", &err));
  EXPECT_EQ(45000, ParseDuration("45s", &err));
  EXPECT_EQ(3600000 + 30000, ParseDuration("1h0m30s", &err));
  EXPECT_EQ(2 * 3600000 + 5000, ParseDuration("2h5s", &err));
}

TEST(DurationTest, RefusesWhatIsNotADuration) {
  for (const char* bad : {"", "90", "5x", "h", "30m5h", "5m5m", "0s", "0h0m", "-5m", "5h 30m", "1.5h", "9999999h"}) {
    std::string err;
    EXPECT_FALSE(ParseDuration(bad, &err)) << bad;
    EXPECT_FALSE(err.empty()) << bad;
  }
  std::string err;
  ParseDuration("90", &err);
  EXPECT_EQ("'90' has no unit (h, m or s)", err);
}

TEST(DurationTest, TextReadsAsTheParserReadsIt) {
  EXPECT_EQ("5h30m", DurationText(5 * 3600000 + 30 * 60000));
  EXPECT_EQ("1m05s", DurationText(65000));
  EXPECT_EQ("45s", DurationText(45000));
  EXPECT_EQ("0.4s", DurationText(400));
  EXPECT_EQ("2h00m07s", DurationText(2 * 3600000 + 7000));
}

// A graph built from a manifest, with a prediction per output ("out" -> ms).
class DeadlineDecisionTest : public ::testing::Test {
 protected:
  void Parse(const std::string& manifest) {
    ManifestParser parser(&state_, &fs_);
    std::string err;
    ASSERT_TRUE(parser.ParseTest(manifest, &err)) << err;
  }
  Edge* EdgeOf(const std::string& output) { return state_.LookupNode(output)->in_edge; }
  Deadline Make(int64_t at_ms, int64_t grace_ms) {
    return Deadline(at_ms, grace_ms, [this](const Edge* edge) {
      auto it = predictions_.find(edge->outputs[0]->path);
      return it == predictions_.end() ? int64_t{-1} : it->second;
    });
  }

  State state_;
  VirtualFileSystem fs_;
  std::map<std::string, int64_t> predictions_;
};

TEST_F(DeadlineDecisionTest, StartsOnlyJobsPredictedToEndByTheDeadline) {
  Parse("rule cc\n  command = cc\nbuild a: cc\nbuild b: cc\n");
  predictions_ = {{"a", 4000}, {"b", 6000}};
  Deadline deadline = Make(10000, 1000);
  EXPECT_TRUE(deadline.MayStart(EdgeOf("a"), 5000));  // ends at 9 s
  EXPECT_FALSE(deadline.refused_any());
  EXPECT_FALSE(deadline.MayStart(EdgeOf("b"), 5000));  // would end at 11 s
  EXPECT_TRUE(deadline.refused_any());
  EXPECT_TRUE(deadline.MayStart(EdgeOf("b"), 4000));   // ends exactly at the deadline
  EXPECT_FALSE(deadline.MayStart(EdgeOf("a"), 10000));  // nothing starts at or after it
}

TEST_F(DeadlineDecisionTest, UnknownJobsCountAsTheMeanOfThoseFinished) {
  Parse("rule cc\n  command = cc\nbuild a: cc\n");
  Deadline deadline = Make(10000, 1000);
  EXPECT_TRUE(deadline.MayStart(EdgeOf("a"), 9000));  // nothing known yet: it may start
  deadline.JobFinished(2000);
  deadline.JobFinished(4000);
  EXPECT_FALSE(deadline.MayStart(EdgeOf("a"), 7500));  // 3 s typical: would end at 10.5 s
  EXPECT_TRUE(deadline.MayStart(EdgeOf("a"), 7000));
}

TEST_F(DeadlineDecisionTest, ChainFitsOnlyWhenTheWorkWaitingForItFitsToo) {
  Parse("rule cc\n  command = cc\nbuild a.o: cc\nbuild lib: cc a.o\nbuild b.o: cc\n");
  predictions_ = {{"a.o", 2000}, {"lib", 5000}, {"b.o", 2000}};
  Deadline deadline = Make(10000, 1000);
  EXPECT_FALSE(deadline.ChainFits(EdgeOf("a.o"), 4000));  // a.o then lib: ends at 11 s
  EXPECT_TRUE(deadline.MayStart(EdgeOf("a.o"), 4000));    // a.o alone fits
  EXPECT_TRUE(deadline.ChainFits(EdgeOf("b.o"), 4000));
  EXPECT_TRUE(deadline.ChainFits(EdgeOf("a.o"), 3000));
}

TEST_F(DeadlineDecisionTest, RunningJobsMayFinishWithinTheGraceOnly) {
  Parse("rule cc\n  command = cc\nbuild a: cc\nbuild b: cc\n");
  predictions_ = {{"a", 5000}, {"b", 8000}};
  Deadline deadline = Make(10000, 1000);
  EXPECT_TRUE(deadline.MayFinishInGrace(EdgeOf("a"), 6000));   // ends at 11 s: within the grace
  EXPECT_FALSE(deadline.MayFinishInGrace(EdgeOf("b"), 4000));  // ends at 12 s
  EXPECT_FALSE(deadline.Reached(9999));
  EXPECT_TRUE(deadline.Reached(10000));
  EXPECT_EQ(4000, deadline.MsUntilNextCheck(6000));
  EXPECT_EQ(500, deadline.MsUntilNextCheck(10500));
  EXPECT_TRUE(deadline.GraceOver(11000));
}

TEST(DeadlineGraceTest, OnePercentBetweenOneSecondAndOneMinute) {
  EXPECT_EQ(1000, Deadline::DefaultGraceMs(30000));
  EXPECT_EQ(36000, Deadline::DefaultGraceMs(3600000));
  EXPECT_EQ(60000, Deadline::DefaultGraceMs(5 * 3600000 + 30 * 60000));
}

// Jobs "run MS OUT" take MS on the manual clock, then create OUT; Wait advances the clock to the next end or
// by its timeout. AbortAll leaves the outputs of the jobs it stops half-written (touched), as a killed compiler.
class TimedRunner : public ProcessRunner {
 public:
  TimedRunner(VirtualFileSystem* fs, ManualClock* clock) : fs_(fs), clock_(clock) {}
  JobId Start(const std::string& command, const JobStartOptions&, std::string*) override {
    std::istringstream words(command);
    std::string verb, output, fails;
    int64_t ms = 0;
    words >> verb >> ms >> output >> fails;
    started.push_back(output);
    jobs_[next_id_] = Job{clock_->now_ms + ms, output, fails == "fail"};
    return next_id_++;
  }
  WaitResult Wait(int timeout_ms, std::vector<JobExit>* finished) override {
    auto next = jobs_.begin();
    for (auto it = jobs_.begin(); it != jobs_.end(); ++it)
      if (it->second.end_ms < next->second.end_ms) next = it;
    if (next == jobs_.end() || (timeout_ms >= 0 && next->second.end_ms > clock_->now_ms + timeout_ms)) {
      clock_->now_ms += timeout_ms < 0 ? 0 : timeout_ms;
      return WaitResult::kTimeout;
    }
    clock_->now_ms = next->second.end_ms;
    JobExit& exit = finished->emplace_back();
    exit.id = next->first;
    exit.exited_normally = true;
    exit.exit_code = next->second.fails ? 1 : 0;
    if (!next->second.fails) fs_->Create(next->second.output);
    jobs_.erase(next);
    return WaitResult::kJobsFinished;
  }
  pid_t PidOf(JobId id) const override { return 1000 + id; }
  pid_t ProcessGroupOf(JobId id) const override { return 1000 + id; }
  bool SignalJob(JobId, int) override { return true; }
  void AbortAll(int sig) override {
    aborted_with = sig;
    for (auto& [id, job] : jobs_) {
      aborted.push_back(job.output);
      fs_->Create(job.output);  // half-written when it was killed
    }
    jobs_.clear();
  }
  size_t running_count() const override { return jobs_.size(); }
  int interrupt_signal() const override { return 0; }

  std::vector<std::string> started, aborted;
  int aborted_with = 0;

 private:
  struct Job {
    int64_t end_ms;
    std::string output;
    bool fails;
  };
  VirtualFileSystem* fs_;
  ManualClock* clock_;
  std::map<JobId, Job> jobs_;
  JobId next_id_ = 1;
};

class DeadlineBuildTest : public ::testing::Test {
 protected:
  void SetUp() override { config_.parallelism = 2; }
  void Parse(const std::string& manifest) {
    ManifestParser parser(&state_, &fs_);
    ASSERT_TRUE(parser.ParseTest(manifest, &err_)) << err_;
  }
  // Builds "all" with a deadline `at_ms` from now; predictions from `predictions_` (ms per output).
  BuildResult BuildWithDeadline(int64_t at_ms, int64_t grace_ms) {
    state_.Reset();
    Builder builder(&state_, config_, &log_, &deps_log_, &fs_, &status_, &clock_);
    builder.set_runner(&runner_);
    Deadline deadline(clock_.now_ms + at_ms, grace_ms, [this](const Edge* edge) {
      auto it = predictions_.find(edge->outputs[0]->path);
      return it == predictions_.end() ? int64_t{-1} : it->second;
    });
    builder.set_deadline(&deadline);
    err_.clear();
    if (!builder.AddTarget("all", &err_)) ADD_FAILURE() << err_;
    if (builder.AlreadyUpToDate()) return BuildResult::kSucceeded;
    BuildResult result = builder.Build(&err_);
    exit_code_ = builder.failure_exit_code();
    return result;
  }

  State state_;
  VirtualFileSystem fs_;
  ManualClock clock_;
  TimedRunner runner_{&fs_, &clock_};
  BuildConfig config_;
  BuildLog log_;
  DepsLog deps_log_;
  NullStatus status_;
  std::map<std::string, int64_t> predictions_;
  std::string err_;
  int exit_code_ = 0;
};

// Four 3 s jobs on -j2 before a 5 s deadline: two run, the next two would end at 6 s and never start.
TEST_F(DeadlineBuildTest, StartsNothingPredictedPastTheDeadlineAndStopsWithItsExitCode) {
  Parse("rule run\n  command = run $ms $out\n"
        "build a: run\n  ms = 3000\nbuild b: run\n  ms = 3000\nbuild c: run\n  ms = 3000\nbuild d: run\n  ms = 3000\n"
        "build all: phony a b c d\n");
  predictions_ = {{"a", 3000}, {"b", 3000}, {"c", 3000}, {"d", 3000}};
  EXPECT_EQ(BuildResult::kStoppedAtDeadline, BuildWithDeadline(5000, 1000));
  EXPECT_EQ(kDeadlineExitCode, exit_code_);
  EXPECT_EQ((std::vector<std::string>{"a", "b"}), runner_.started);
  EXPECT_TRUE(runner_.aborted.empty());
  EXPECT_EQ(3000, clock_.now_ms);  // it stopped as soon as nothing else could fit, not at the deadline
  EXPECT_EQ("deadline in 2s: no remaining job fits before it, 2/4 jobs done; run again to resume", err_);
  EXPECT_TRUE(log_.LookupByOutput("a"));
  EXPECT_TRUE(log_.LookupByOutput("b"));
  EXPECT_FALSE(log_.LookupByOutput("c"));

  // The next run does only the rest.
  runner_.started.clear();
  EXPECT_EQ(BuildResult::kSucceeded, BuildWithDeadline(60000, 1000)) << err_;
  EXPECT_EQ((std::vector<std::string>{"c", "d"}), runner_.started);
}

// Jobs still running at the deadline (they ran longer than predicted) get the grace: one that ends in it
// finishes and is recorded; the other is stopped when the grace is over, its half-written output removed
// (as an interrupted ninja does) and nothing recorded for it.
TEST_F(DeadlineBuildTest, AtTheDeadlineRunningJobsGetTheGraceThenStop) {
  Parse("rule run\n  command = run $ms $out\n"
        "build near: run\n  ms = 5500\nbuild slow: run\n  ms = 9000\nbuild all: phony slow near\n");
  predictions_ = {{"slow", 4000}, {"near", 4000}};  // both predicted to fit; both run longer
  EXPECT_EQ(BuildResult::kStoppedAtDeadline, BuildWithDeadline(5000, 1000));
  EXPECT_EQ(kDeadlineExitCode, exit_code_);
  EXPECT_EQ((std::vector<std::string>{"near", "slow"}), runner_.started);
  EXPECT_EQ((std::vector<std::string>{"slow"}), runner_.aborted);
  EXPECT_EQ(SIGTERM, runner_.aborted_with);
  EXPECT_EQ(6000, clock_.now_ms);  // deadline + grace
  EXPECT_EQ("deadline reached (1s past it), 1/2 jobs done; run again to resume", err_);
  std::string stat_err;
  EXPECT_EQ(0, fs_.Stat("slow", &stat_err));  // removed
  EXPECT_TRUE(log_.LookupByOutput("near"));
  EXPECT_FALSE(log_.LookupByOutput("slow"));
}

// A job started with nothing known about it is judged at the deadline by the mean of the jobs finished since.
TEST_F(DeadlineBuildTest, JobsStartedWithNoPredictionGetTheGraceThenStop) {
  config_.parallelism = 1;
  Parse("rule run\n  command = run $ms $out\n"
        "build first: run\n  ms = 1000\nbuild second: run\n  ms = 20000\nbuild all: phony first second\n");
  // "first" is unknown (0 before any job ended); "second" is unknown too, started when the mean was 1 s; a
  // prediction learnt later (the mean) that ends past the grace stops it at the deadline.
  predictions_ = {};
  EXPECT_EQ(BuildResult::kStoppedAtDeadline, BuildWithDeadline(3000, 500));
  EXPECT_EQ((std::vector<std::string>{"first", "second"}), runner_.started);
  EXPECT_EQ(3500, clock_.now_ms);  // second started at 1 s, predicted 1 s: overdue, so it got the grace
  EXPECT_EQ((std::vector<std::string>{"second"}), runner_.aborted);
}

// As the deadline nears, a ready job whose chain to the targets fits goes before a longer-chain head.
TEST_F(DeadlineBuildTest, NearTheDeadlineWorkThatCompletesATargetGoesFirst) {
  config_.parallelism = 1;
  Parse("rule run\n  command = run $ms $out\n"
        "build big.o: run\n  ms = 3000\nbuild big: run big.o\n  ms = 4000\n"
        "build small: run\n  ms = 2000\nbuild all: phony big small\n");
  predictions_ = {{"big.o", 3000}, {"big", 4000}, {"small", 2000}};
  // Without a deadline big.o (longest chain) would go first; with 6 s left big.o + big cannot both fit.
  EXPECT_EQ(BuildResult::kStoppedAtDeadline, BuildWithDeadline(6000, 1000));
  ASSERT_FALSE(runner_.started.empty());
  EXPECT_EQ("small", runner_.started[0]);
}

// With -k, a job that failed decides the exit status: running the build again would not fix it.
TEST_F(DeadlineBuildTest, AFailedJobKeepsItsExitStatusWhenTheDeadlineStopsTheBuild) {
  config_.parallelism = 1;
  config_.failures_allowed = INT_MAX;
  Parse("rule run\n  command = run $ms $out $fails\n"
        "build bad: run\n  ms = 1000\n  fails = fail\nbuild long: run\n  ms = 9000\nbuild all: phony bad long\n");
  predictions_ = {{"bad", 1000}, {"long", 9000}};
  EXPECT_EQ(BuildResult::kFailed, BuildWithDeadline(5000, 500));
  EXPECT_EQ(1, exit_code_);
  EXPECT_EQ("deadline in 4s: no remaining job fits before it, 0/2 jobs done; run again to resume (1 failed)", err_);
}

// A build that cannot end by the deadline does its targets one at a time, the smallest first, so the library
// that is done at the deadline is linked; without a deadline ninja's order would start every object first.
TEST_F(DeadlineBuildTest, ABuildThatCannotFitCompletesItsSmallestTargetFirst) {
  config_.parallelism = 1;
  Parse("rule run\n  command = run $ms $out\n"
        "build b1: run\n  ms = 1000\nbuild b2: run\n  ms = 1000\nbuild b3: run\n  ms = 1000\n"
        "build libB: run b1 b2 b3\n  ms = 1000\n"
        "build a1: run\n  ms = 1000\nbuild a2: run\n  ms = 1000\nbuild libA: run a1 a2\n  ms = 1000\n"
        "build all: phony libB libA\n");
  predictions_ = {{"b1", 1000}, {"b2", 1000}, {"b3", 1000}, {"libB", 1000},
                  {"a1", 1000}, {"a2", 1000}, {"libA", 1000}};
  EXPECT_EQ(BuildResult::kStoppedAtDeadline, BuildWithDeadline(4500, 500));
  EXPECT_EQ((std::vector<std::string>{"a1", "a2", "libA", "b1"}), runner_.started);
  EXPECT_TRUE(log_.LookupByOutput("libA"));
}

TEST_F(DeadlineDecisionTest, ABuildThatFitsKeepsItsUsualCosts) {
  Parse("rule cc\n  command = cc\nbuild a: cc\nbuild b: cc a\n");
  predictions_ = {{"a", 1000}, {"b", 1000}};
  Deadline deadline = Make(10000, 1000);
  auto cost = deadline.TargetsFirst({EdgeOf("a"), EdgeOf("b")}, {}, 1, 0);
  EXPECT_EQ(1, cost(EdgeOf("a")).cost);
  EXPECT_EQ(1, cost(EdgeOf("b")).cost);
  Deadline tight = Make(1500, 1000);
  auto reshaped = tight.TargetsFirst({EdgeOf("a"), EdgeOf("b")}, {}, 1, 0);
  EXPECT_EQ(1, reshaped(EdgeOf("a")).cost);  // the bonus sits on the target; the plan passes it down the chain
  EXPECT_GT(reshaped(EdgeOf("b")).cost, 2);
}

}  // namespace
}  // namespace headroom
