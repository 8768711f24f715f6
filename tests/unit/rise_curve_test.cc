// Tests for RiseCurve (levels, bounds, the history field) and RiseRecorder (a curve from samples).
#include <gtest/gtest.h>

#include "headroom/history/rise_curve.h"
#include "headroom/util/byte_size.h"

namespace headroom {
namespace {

RiseCurve Curve(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  RiseCurve curve;
  curve.below = {a, b, c, d};
  return curve;
}

TEST(RiseCurveTest, BoundIsTheFirstLevelNotYetReachedAndThePeakAfterTheLast) {
  const RiseCurve curve = Curve(51, 102, 153, 204);  // 25 % at 20 % of the run, 50 % at 40 %, ...
  EXPECT_DOUBLE_EQ(curve.BoundAt(0.0), 0.25);
  EXPECT_DOUBLE_EQ(curve.BoundAt(0.19), 0.25);
  EXPECT_DOUBLE_EQ(curve.BoundAt(0.2), 0.50);
  EXPECT_DOUBLE_EQ(curve.BoundAt(0.5), 0.75);
  EXPECT_DOUBLE_EQ(curve.BoundAt(0.7), 0.90);
  EXPECT_DOUBLE_EQ(curve.BoundAt(0.8), 1.0);
  EXPECT_DOUBLE_EQ(curve.BoundAt(5.0), 1.0);
  EXPECT_DOUBLE_EQ(RiseCurve{}.BoundAt(0.0), 1.0) << "unknown: it may hold its peak from the start";
}

TEST(RiseCurveTest, TheFasterOfTwoRunsBoundsBothAndUnknownWins) {
  EXPECT_EQ(RiseCurve::Faster(Curve(10, 80, 90, 200), Curve(20, 40, 100, 150)), Curve(10, 40, 90, 150));
  EXPECT_FALSE(RiseCurve::Faster(Curve(10, 80, 90, 200), RiseCurve{}).known());
  EXPECT_FALSE(RiseCurve::Faster(RiseCurve{}, Curve(10, 80, 90, 200)).known());
}

TEST(RiseCurveTest, FormatsAndParsesTheHistoryField) {
  RiseCurve parsed;
  EXPECT_EQ(Curve(0, 64, 128, 255).Format(), "0/64/128/255");
  ASSERT_TRUE(RiseCurve::Parse("0/64/128/255", &parsed));
  EXPECT_EQ(parsed, Curve(0, 64, 128, 255));
  EXPECT_EQ(RiseCurve{}.Format(), "-");
  ASSERT_TRUE(RiseCurve::Parse("-", &parsed));
  EXPECT_FALSE(parsed.known());
  for (const char* bad : {"", "1/2/3", "1/2/3/4/5", "1/2/3/256", "4/3/2/1", "a/b/c/d", "1//2/3", "-1/2/3/4", "1/2/3/4 "}) {
    EXPECT_FALSE(RiseCurve::Parse(bad, &parsed)) << bad;
  }
}

TEST(RiseCurveTest, RecorderKeepsTheLastSampleBelowEachLevel) {
  // A linear ramp to 1000 MiB over 600 ms, then a hold to 1000 ms, sampled every 100 ms.
  RiseRecorder recorder;
  for (int64_t t = 0; t <= 1000; t += 100) recorder.Sample(t, std::min<int64_t>(t, 600) * 1000 / 600 * kMiB);
  const RiseCurve curve = recorder.Finish(1000 * kMiB, 1000);
  // 25 % (250 MiB) is first seen at 200 ms (333 MiB): the last sample below was at 100 ms; 50 % at 300 ms (the
  // sample at 300 ms holds exactly 500 MiB) so 200 ms; 75 % at 500 ms, so 400 ms; 90 % at 600 ms, so 500 ms.
  EXPECT_EQ(curve, Curve(25, 51, 102, 127));
  // Never later than the truth: at each share the ramp is at most the bound.
  for (double share = 0; share <= 1.0; share += 0.01) {
    const double held = std::min(share * 1000 / 600, 1.0);
    EXPECT_LE(held, curve.BoundAt(share) + 1e-9) << share;
  }
}

TEST(RiseCurveTest, AJobAtItsPeakFromTheFirstSampleHasAnUnknownCurve) {
  RiseRecorder recorder;
  recorder.Sample(200, 500 * kMiB);
  recorder.Sample(400, 500 * kMiB);
  EXPECT_FALSE(recorder.Finish(500 * kMiB, 500).known());
  EXPECT_FALSE(RiseRecorder().Finish(500 * kMiB, 500).known()) << "never sampled";
}

TEST(RiseCurveTest, APeakMissedBySamplingCountsAsReachedWhereTheSamplesLastGrew) {
  RiseRecorder recorder;
  recorder.Sample(100, 100 * kMiB);
  recorder.Sample(200, 400 * kMiB);
  recorder.Sample(300, 400 * kMiB);
  recorder.Sample(400, 400 * kMiB);
  // The exact peak, 1000 MiB, was never sampled: 50 %, 75 % and 90 % count as reached after 100 ms.
  EXPECT_EQ(recorder.Finish(1000 * kMiB, 1000), Curve(25, 25, 25, 25));
}

TEST(RiseCurveTest, SmallGrowthJoinsTheLastPointWithoutMakingTheCurveLater) {
  RiseRecorder recorder;
  recorder.Sample(0, 1000 * kMiB);
  for (int64_t t = 10; t <= 1000; t += 10) recorder.Sample(t, (1000 + static_cast<uint64_t>(t) / 100) * kMiB);
  // 1000 -> 1010 MiB in steps well under 1 %: one point; every level of the 1010 MiB peak was reached by 0 ms.
  EXPECT_FALSE(recorder.Finish(1010 * kMiB, 1000).known());
}

}  // namespace
}  // namespace headroom
