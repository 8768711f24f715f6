// Tests for the command-line options: what -h states about headroom's defaults, and the CPU count they start from.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

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
