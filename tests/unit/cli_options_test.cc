// Tests for the command-line options: what -h states about headroom's defaults, headroom's own flags, and the CPU
// count they start from.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "headroom/admission/admission_policy.h"
#include "headroom/build/build_config.h"
#include "headroom/cli/options.h"

namespace headroom {
namespace {

std::string UsageText() {
  testing::internal::CaptureStderr();
  PrintUsage(BuildConfig{});
  return testing::internal::GetCapturedStderr();
}

// ReadFlags over `args` (argv[0] first), with argv null-terminated as main's is.
std::optional<int> Read(std::vector<std::string> args, Options* options, BuildConfig* config) {
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  return ReadFlags(static_cast<int>(args.size()), argv.data(), options, config);
}

TEST(CliOptionsTest, UsageStatesTheReserveDefaultTheCodeApplies) {
  const std::string usage = UsageText();
  EXPECT_NE(usage.find("--mem-reserve=SIZE"), std::string::npos) << usage;
  // Two lines in -h: the unguarded rule, then the guarded one under it, aligned with the flag's text.
  EXPECT_NE(usage.find("[default: " + DescribeDefaultReserve(";\n" + std::string(25, ' ')) + "]"), std::string::npos)
      << usage;
}

TEST(CliOptionsTest, UsageNamesTheRemotePoolFlag) {
  EXPECT_NE(UsageText().find("--remote-jobs=N"), std::string::npos);
}

TEST(CliOptionsTest, MemLogNamesTheDecisionLogFileAndIsOffWithoutIt) {
  EXPECT_NE(UsageText().find("--mem-log=FILE"), std::string::npos);
  for (const bool given : {true, false}) {
    std::vector<std::string> args = {"ninja", "-j2", "target"};
    if (given) args.insert(args.begin() + 1, "--mem-log=/tmp/decisions.log");
    Options options;
    BuildConfig config;
    EXPECT_FALSE(Read(args, &options, &config).has_value());
    EXPECT_EQ(options.mem_log_path, given ? "/tmp/decisions.log" : "");
    EXPECT_EQ(options.args, std::vector<std::string>{"target"});
  }
}

TEST(CliOptionsTest, DeadlineIsReadAsMillisecondsAndDocumentedWithItsExitStatus) {
  Options options;
  BuildConfig config;
  EXPECT_EQ(std::nullopt, Read({"ninja", "--deadline=1h30m", "all"}, &options, &config));
  EXPECT_EQ(90 * 60 * 1000, config.deadline_ms);
  EXPECT_EQ(std::vector<std::string>{"all"}, options.args);
  const std::string usage = UsageText();
  EXPECT_NE(usage.find("--deadline=DURATION"), std::string::npos) << usage;
  EXPECT_NE(usage.find("exit status 75"), std::string::npos) << usage;
}

TEST(CliOptionsTest, BadDeadlineIsAnErrorExit) {
  Options options;
  BuildConfig config;
  testing::internal::CaptureStderr();
  EXPECT_EQ(1, Read({"ninja", "--deadline=90"}, &options, &config));
  EXPECT_EQ("ninja: error: invalid --deadline '90': '90' has no unit (h, m or s); expected a duration like 5h30m, 90m "
            "or 45s\n",
            testing::internal::GetCapturedStderr());
}

// Sets an environment variable for one test and puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(CliOptionsTest, TheTestCpuCountReplacesTheMachinesAndSetsTheDefaultJobs) {
  {
    ScopedEnv cpus("HEADROOM_TEST_CPUS", "64");
    EXPECT_EQ(UsableCpus(), 64);
    EXPECT_EQ(GuessParallelism(UsableCpus()), 66);
  }
  int real = 0;
  {
    ScopedEnv none("HEADROOM_TEST_CPUS", "");
    real = UsableCpus();
  }
  for (const char* bad : {"0", "-4", "64x", "lots", "100000"}) {
    ScopedEnv cpus("HEADROOM_TEST_CPUS", bad);
    EXPECT_EQ(UsableCpus(), real) << bad;  // not a count: the machine's own
  }
}

}  // namespace
}  // namespace headroom
