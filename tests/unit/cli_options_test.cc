// Tests for the command-line options: what -h states about headroom's defaults.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace headroom
