// Fallback detection for remote jobs, and which launcher exits are the farm's failures rather than the source's.
#include <gtest/gtest.h>

#include "headroom/admission/remote_fallback.h"
#include "headroom/util/byte_size.h"

namespace headroom {
namespace {

TEST(RemoteFallbackTest, ATreeFarAboveItsResidualIsCompilingHere) {
  // The figures measured on 127.0.0.1: 42 MiB while the daemon compiled, ~300 MiB compiling locally.
  EXPECT_FALSE(LooksLikeLocalFallback(42 * kMiB, 42 * kMiB));
  EXPECT_FALSE(LooksLikeLocalFallback(100 * kMiB, 42 * kMiB));  // a larger preprocessor run is not a fallback
  EXPECT_TRUE(LooksLikeLocalFallback(300 * kMiB, 42 * kMiB));
  EXPECT_EQ(106 * kMiB, FallbackThresholdBytes(42 * kMiB));
  EXPECT_EQ(1 * kGiB, FallbackThresholdBytes(512 * kMiB));  // large residuals: twice the estimate
  EXPECT_EQ(64 * kMiB, FallbackThresholdBytes(0));          // nothing learned yet
}

TEST(RemoteFallbackTest, DistccInfrastructureExitsAreRetriedLocally) {
  for (int code : {100, 103, 107, 109, 113, 114, 116, 118}) EXPECT_TRUE(IsInfrastructureExit("distcc", code)) << code;
  // The source's or the user's failures stay failures.
  for (int code : {0, 1, 4, 101, 104, 111, 115, 120, 137}) EXPECT_FALSE(IsInfrastructureExit("distcc", code)) << code;
  EXPECT_FALSE(IsInfrastructureExit("icecc", 103));  // codes of other engines are not known
  EXPECT_FALSE(IsInfrastructureExit("", 103));
}

TEST(RemoteFallbackTest, DistccSaysWhenItRanAJobLocally) {
  EXPECT_TRUE(LauncherReportedLocalRun(
      "distcc", "distcc[2056] ERROR: nonblocking connect to 127.0.0.1:38699 failed: Connection refused\n"
                "distcc[2056] Warning: failed to distribute small.cc to 127.0.0.1:38699/4, running locally instead\n"));
  // The form distcc prints when it gave up before picking a host (e.g. the host is in backoff).
  EXPECT_TRUE(LauncherReportedLocalRun(
      "distcc", "distcc[31913] (dcc_build_somewhere) Warning: failed to distribute, running locally instead\n"));
  EXPECT_FALSE(LauncherReportedLocalRun("distcc", "a.cc:3:1: warning: unused variable\n"));
  EXPECT_FALSE(LauncherReportedLocalRun("icecc", "failed to distribute x, running locally instead"));
}

TEST(RemoteFallbackTest, LocalRetryEnvironment) {
  auto distcc = LocalRetryEnvironment("distcc");
  ASSERT_EQ(1u, distcc.size());
  EXPECT_EQ("DISTCC_HOSTS", distcc[0].first);
  EXPECT_EQ("localhost", distcc[0].second);
  EXPECT_TRUE(LocalRetryEnvironment("sccache-dist").empty());
}

}  // namespace
}  // namespace headroom
