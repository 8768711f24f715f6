// Tests of the scheduler core's own rules that the build and the simulator share (scheduler_core.h); the replay
// tests check that both drive it alike.
#include <gtest/gtest.h>

#include "headroom/admission/scheduler_core.h"
#include "headroom/util/byte_size.h"

namespace headroom {
namespace {

MemoryReading QuietReading(uint64_t total) {
  MemoryReading reading;
  reading.limit_bytes = total;
  reading.available_bytes = total;
  return reading;
}

// Under the build guard a guess is admitted at a share of the budget, on the bet that watching the job catches a
// miss in time. A compile in sccache's server cannot be watched (the job's processes are its client), nor stopped by
// killing the job, so its guess is held whole.
TEST(SchedulerCoreTest, AGuessIsAdmittedAtAShareOnlyWhereItsJobCanBeWatched) {
  AdmissionConfig admission;
  admission.guarded = true;
  SchedulerCore core(admission);
  EstimateFigures guess;
  guess.peak_bytes = 6 * kGiB;
  guess.source = EstimateSource::kPrior;
  CoreJobTraits watched, served;
  served.unwatched = true;
  core.Track(1, watched);
  core.Track(2, served);
  core.SetEstimate(1, guess, 0);
  core.SetEstimate(2, guess, 0);
  EXPECT_TRUE(core.IsGuess(1));
  EXPECT_FALSE(core.IsGuess(2));

  const uint64_t budget = 8 * kGiB;
  const uint64_t share = core.policy().AdmittedPeak(guess.peak_bytes, true, budget);
  ASSERT_LT(share, guess.peak_bytes) << "the premise: a 6 GiB guess is admitted at a share of an 8 GiB budget";
  EXPECT_TRUE(core.CandidateFor(1, 1.0, 0).from_prior);
  EXPECT_FALSE(core.CandidateFor(2, 1.0, 0).from_prior);
  // In a walk on a quiet 8 GiB machine: the watched guess fits at its share, the served one does not fit beside it.
  core.BeginPass(QuietReading(budget), 0);
  EXPECT_EQ(CoreStep::Kind::kAdmitted, core.Consider(1, 2.0, 0).kind);
  core.Start(1, 101, 2.0, 0);
  const CoreStep second = core.Consider(2, 1.0, 0);
  EXPECT_EQ(CoreStep::Kind::kWaitsForMemory, second.kind) << second.decision.reason;
}

}  // namespace
}  // namespace headroom
