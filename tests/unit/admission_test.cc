// Tests for the admission rule, the safety net, the requeue policy and critical-path priorities.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "headroom/admission/admission_policy.h"
#include "headroom/admission/priority.h"
#include "headroom/admission/safety_net.h"
#include "headroom/estimator/estimator.h"

namespace headroom {
namespace {

MemoryReading Reading(uint64_t limit, uint64_t available, double psi = 0.0) {
  MemoryReading reading;
  reading.limit_bytes = limit;
  reading.available_bytes = available;
  reading.used_bytes = limit - available;
  reading.pressure_some_pct = psi;
  return reading;
}

RunningJob Running(uint64_t id, uint64_t peak, uint64_t rss, int64_t started = 0, std::string cls = "c") {
  RunningJob job;
  job.id = id;
  job.class_key = std::move(cls);
  job.predicted_peak = peak;
  job.rss = job.peak_rss = rss;
  job.started_ms = job.last_growth_ms = started;
  return job;
}

Candidate Cand(uint64_t id, uint64_t peak, std::string cls = "other") {
  Candidate c;
  c.id = id;
  c.predicted_peak = peak;
  c.class_key = std::move(cls);
  return c;
}

TEST(AdmissionTest, BudgetAndReserveDefaults) {
  AdmissionPolicy policy;
  EXPECT_EQ(policy.Budget(Reading(64 * kGiB, 60 * kGiB)), 64 * kGiB);
  EXPECT_EQ(policy.Reserve(64 * kGiB), static_cast<uint64_t>(64 * kGiB * 0.05));
  EXPECT_EQ(policy.Reserve(4 * kGiB), 512 * kMiB);
  // Small boxes: the floor is capped at an eighth of the budget, or it would serialise their builds.
  EXPECT_EQ(policy.Reserve(1536 * kMiB), 192 * kMiB);
  EXPECT_EQ(policy.Reserve(2 * kGiB), 256 * kMiB);
  AdmissionPolicy capped({.budget_bytes = 16 * kGiB, .reserve_bytes = 1 * kGiB});
  EXPECT_EQ(capped.Budget(Reading(64 * kGiB, 60 * kGiB)), 16 * kGiB);
  EXPECT_EQ(capped.Budget(Reading(8 * kGiB, 6 * kGiB)), 8 * kGiB);
  EXPECT_EQ(capped.Reserve(16 * kGiB), 1 * kGiB);
}

// -h prints DescribeDefaultReserve(); the formula it states must be the one Reserve() applies by default.
TEST(AdmissionTest, DescribedDefaultReserveIsTheOneApplied) {
  EXPECT_EQ(DescribeDefaultReserve(),
            "max(5% of budget, min(512 MiB, 12.5% of budget)); "
            "under the build guard max(2% of budget, min(256 MiB, 4% of budget))");
  AdmissionPolicy policy;
  AdmissionPolicy guarded({.guarded = true});
  for (uint64_t budget : {256 * kMiB, 1536 * kMiB, 3 * kGiB, 4 * kGiB, 10 * kGiB, 11 * kGiB, 64 * kGiB}) {
    const double b = static_cast<double>(budget);
    const double stated = std::max(0.05 * b, std::min(512.0 * kMiB, 0.125 * b));
    EXPECT_EQ(policy.Reserve(budget), static_cast<uint64_t>(stated)) << FormatBytes(budget);
    const double stated_guarded = std::max(0.02 * b, std::min(256.0 * kMiB, 0.04 * b));
    EXPECT_EQ(guarded.Reserve(budget), static_cast<uint64_t>(stated_guarded)) << FormatBytes(budget);
  }
}

// Under the guard an overshoot costs a freeze or a requeue, never a kernel OOM kill, so the reserve is smaller:
// in a 1.5 GiB box a 350 MiB job fits beside a 1 GiB one (61 MiB kept free), where 192 MiB kept free forbade it.
TEST(AdmissionTest, TheGuardsSmallerReserveLetsAMediumJobSitBesideAHeavyOne) {
  const MemoryReading reading = Reading(1536 * kMiB, 1536 * kMiB);
  std::vector<RunningJob> heavy = {Running(1, 1024 * kMiB, 1000 * kMiB)};
  const Candidate medium = Cand(2, 350 * kMiB);
  AdmissionPolicy unguarded;
  AdmissionPolicy guarded({.guarded = true});
  EXPECT_EQ(guarded.Reserve(1536 * kMiB), static_cast<uint64_t>(0.04 * 1536 * kMiB));
  EXPECT_FALSE(unguarded.Decide(reading, heavy, medium, 0).admit);
  EXPECT_TRUE(guarded.Decide(reading, heavy, medium, 0).admit);
  // An explicit --mem-reserve is honoured either way.
  EXPECT_EQ(AdmissionPolicy({.reserve_bytes = 192 * kMiB, .guarded = true}).Reserve(1536 * kMiB), 192 * kMiB);
}

TEST(AdmissionTest, AdmitsOnlyWhatFitsAfterWhatRunningJobsStillOwe) {
  AdmissionPolicy policy({.reserve_bytes = 1 * kGiB});
  // 10 GiB available; the running job holds 2 of its predicted 6: it owes 4.
  std::vector<RunningJob> running = {Running(1, 6 * kGiB, 2 * kGiB)};
  MemoryReading reading = Reading(16 * kGiB, 10 * kGiB);
  AdmissionDecision yes = policy.Decide(reading, running, Cand(2, 5 * kGiB), 0);
  EXPECT_TRUE(yes.admit) << yes.reason;
  AdmissionDecision no = policy.Decide(reading, running, Cand(3, 5 * kGiB + 1), 0);
  EXPECT_FALSE(no.admit);
  EXPECT_EQ(no.wait, WaitKind::kMemory);
  EXPECT_EQ(no.reason, "needs ~5.0 GiB, 6.0 GiB left after running jobs (reserve 1.0 GiB)");
}

TEST(AdmissionTest, UserBudgetCapsTheBuildsOwnUsage) {
  AdmissionPolicy policy({.budget_bytes = 8 * kGiB, .reserve_bytes = 512 * kMiB});
  // Plenty free on the machine, but the build already holds 6 GiB of its 8 GiB budget.
  std::vector<RunningJob> running = {Running(1, 6 * kGiB, 6 * kGiB)};
  MemoryReading reading = Reading(64 * kGiB, 50 * kGiB);
  EXPECT_EQ(policy.Headroom(reading, running), 2 * kGiB);
  EXPECT_TRUE(policy.Decide(reading, running, Cand(2, 1 * kGiB), 0).admit);
  EXPECT_FALSE(policy.Decide(reading, running, Cand(3, 2 * kGiB), 0).admit);
}

TEST(AdmissionTest, ForwardProgressAdmitsAnOversizedHeadWhenNothingRuns) {
  AdmissionPolicy policy;
  AdmissionDecision d = policy.Decide(Reading(8 * kGiB, 7 * kGiB), {}, Cand(1, 20 * kGiB), 0);
  EXPECT_TRUE(d.admit);
  EXPECT_TRUE(d.over_budget);
  EXPECT_NE(d.reason.find("over budget"), std::string::npos);
  // Even under pressure: waiting cannot help when nothing of ours runs.
  EXPECT_TRUE(policy.Decide(Reading(8 * kGiB, 100 * kMiB, 50.0), {}, Cand(1, 1 * kGiB), 0).admit);
}

// Other headroom builds sharing the memory run jobs (BuildLedger): theirs will end, so waiting is progress for the
// machine, and a start over budget beside them would only get a job killed. A job that fits still starts.
TEST(AdmissionTest, WithNothingRunningAHeadThatDoesNotFitWaitsWhileOtherBuildsRunJobs) {
  AdmissionPolicy policy({.reserve_bytes = 512 * kMiB});
  MemoryReading reading = Reading(8 * kGiB, 3 * kGiB);
  reading.other_builds_busy = 2;
  AdmissionDecision waits = policy.Decide(reading, {}, Cand(1, 4 * kGiB), 0);
  EXPECT_FALSE(waits.admit);
  EXPECT_EQ(waits.wait, WaitKind::kMemory);
  EXPECT_NE(waits.reason.find("waiting for 2 other headroom build(s) to free memory"), std::string::npos) << waits.reason;
  EXPECT_TRUE(policy.Decide(reading, {}, Cand(2, 2 * kGiB), 0).admit);
  EXPECT_TRUE(policy.Decide(reading, {}, Cand(3, 9 * kGiB), 0).over_budget);  // larger than the limit: no use waiting
  reading.other_builds_busy = 0;
  EXPECT_TRUE(policy.Decide(reading, {}, Cand(1, 4 * kGiB), 0).over_budget);
}

// A job over this build's budget but within the memory limit succeeds alone; beside other builds' jobs a guard
// killed it attempt after attempt (seen with two builds in a 3 GiB box), so it waits for them like any other.
TEST(AdmissionTest, WithNothingRunningAHeadOverTheBudgetButWithinTheLimitWaitsForOtherBuilds) {
  AdmissionPolicy policy({.budget_bytes = 6 * kGiB, .reserve_bytes = 512 * kMiB});
  MemoryReading reading = Reading(8 * kGiB, 8 * kGiB);
  reading.other_builds_busy = 1;
  AdmissionDecision waits = policy.Decide(reading, {}, Cand(1, 7 * kGiB), 0);
  EXPECT_FALSE(waits.admit);
  EXPECT_EQ(waits.wait, WaitKind::kMemory);
  EXPECT_NE(waits.reason.find("waiting for 1 other headroom build(s) to free memory"), std::string::npos)
      << waits.reason;
  reading.other_builds_busy = 0;
  AdmissionDecision alone = policy.Decide(reading, {}, Cand(1, 7 * kGiB), 0);
  EXPECT_TRUE(alone.admit);
  EXPECT_TRUE(alone.over_budget);
}

TEST(AdmissionTest, PressureOrLowAvailabilityStopsAdmission) {
  AdmissionPolicy policy;
  std::vector<RunningJob> running = {Running(1, 1 * kGiB, 1 * kGiB)};
  AdmissionDecision psi = policy.Decide(Reading(32 * kGiB, 20 * kGiB, 25.0), running, Cand(2, 10 * kMiB), 0);
  EXPECT_FALSE(psi.admit);
  EXPECT_EQ(psi.wait, WaitKind::kPressure);
  AdmissionDecision low = policy.Decide(Reading(32 * kGiB, 300 * kMiB), running, Cand(2, 10 * kMiB), 0);
  EXPECT_FALSE(low.admit);
  EXPECT_NE(low.reason.find("below the reserve"), std::string::npos) << low.reason;
}

TEST(AdmissionTest, FrozenOrAloneJobsBlockNewStarts) {
  AdmissionPolicy policy;
  MemoryReading reading = Reading(64 * kGiB, 60 * kGiB);
  std::vector<RunningJob> running = {Running(1, 1 * kGiB, 1 * kGiB)};
  running[0].frozen = true;
  EXPECT_EQ(policy.Decide(reading, running, Cand(2, 1 * kGiB), 0).wait, WaitKind::kFrozen);
  running[0].frozen = false;
  running[0].runs_alone = true;
  EXPECT_EQ(policy.Decide(reading, running, Cand(2, 1 * kGiB), 0).wait, WaitKind::kAlone);
  running[0].runs_alone = false;
  Candidate alone = Cand(2, 1 * kGiB);
  alone.must_run_alone = true;
  EXPECT_EQ(policy.Decide(reading, running, alone, 0).wait, WaitKind::kAlone);
  EXPECT_TRUE(policy.Decide(reading, {}, alone, 0).admit);
}

TEST(AdmissionTest, StaggersIdenticalHeavyJobsUntilThePeakIsBehind) {
  AdmissionPolicy policy({.stagger_ms = 10'000, .plateau_ms = 5'000});
  // 22 available - 7 owed - 8 for it - 1.2 reserve = 5.8 to spare: both could not overshoot by half together.
  MemoryReading reading = Reading(24 * kGiB, 22 * kGiB);
  std::vector<RunningJob> running = {Running(1, 8 * kGiB, 1 * kGiB, /*started=*/0, "nvcc-class")};
  running[0].last_growth_ms = 2'000;
  EXPECT_EQ(policy.Decide(reading, running, Cand(2, 8 * kGiB, "nvcc-class"), 3'000).wait, WaitKind::kStagger);
  // Light jobs and other classes are not staggered.
  EXPECT_TRUE(policy.Decide(reading, running, Cand(3, 8 * kGiB, "other"), 3'000).admit);
  EXPECT_TRUE(policy.Decide(reading, running, Cand(4, 100 * kMiB, "nvcc-class"), 3'000).admit);
  // Past its peak (90% of the estimate reached) ...
  running[0].peak_rss = running[0].rss = 7400 * kMiB;
  EXPECT_TRUE(policy.Decide(reading, running, Cand(2, 8 * kGiB, "nvcc-class"), 3'000).admit);
  // ... or plateaued for 5 s ...
  running[0].peak_rss = running[0].rss = 3 * kGiB;
  EXPECT_TRUE(policy.Decide(reading, running, Cand(2, 8 * kGiB, "nvcc-class"), 7'000).admit);
  // ... or the stagger window is over.
  running[0].last_growth_ms = 10'500;
  EXPECT_TRUE(policy.Decide(reading, running, Cand(2, 8 * kGiB, "nvcc-class"), 11'000).admit);
}

TEST(AdmissionTest, UnknownHeavyClassesProbeWithOneJobAndLearnFromIt) {
  AdmissionPolicy policy({.plateau_ms = 5'000});
  // 12 available - 1 owed - 4 for it - 0.8 reserve: less than a guess twice too low for both would need.
  MemoryReading reading = Reading(16 * kGiB, 12 * kGiB);
  std::vector<RunningJob> running = {Running(1, 4 * kGiB, 3 * kGiB, 0, "new-nvcc")};
  running[0].last_growth_ms = 20'000;
  Candidate next = Cand(2, 4 * kGiB, "new-nvcc");
  next.unknown_heavy = true;
  AdmissionDecision wait = policy.Decide(reading, running, next, 22'000);  // still growing, long after start.
  EXPECT_EQ(wait.wait, WaitKind::kProbe) << wait.reason;
  // Plateaued at 12 GiB, far above the 4 GiB prior: the next one is sized from the probe.
  running[0].rss = running[0].peak_rss = 12 * kGiB;
  running[0].predicted_peak = 12 * kGiB;
  reading = Reading(64 * kGiB, 31 * kGiB);
  AdmissionDecision learned = policy.Decide(reading, running, next, 30'000);
  EXPECT_TRUE(learned.admit) << learned.reason;
  EXPECT_NE(learned.reason.find("needs ~13.2 GiB"), std::string::npos) << learned.reason;
}

TEST(AdmissionTest, AnUnmeasuredFamilyIsProbedByOneMemberWhateverItsDefines) {
  AdmissionPolicy policy;
  MemoryReading reading = Reading(16 * kGiB, 12 * kGiB);
  std::vector<RunningJob> running = {Running(1, 4 * kGiB, 1 * kGiB, 0, "nvcc -DV=1")};
  running[0].family_key = "nvcc -DV";
  running[0].last_growth_ms = 1'000;
  Candidate sibling = Cand(2, 4 * kGiB, "nvcc -DV=2");
  sibling.family_key = "nvcc -DV";
  sibling.unknown_heavy = true;
  EXPECT_EQ(policy.Decide(reading, running, sibling, 2'000).wait, WaitKind::kProbe);
  Candidate stranger = sibling;
  stranger.family_key = "nvcc -DMOE_FULL";
  EXPECT_TRUE(policy.Decide(reading, running, stranger, 2'000).admit);
}

TEST(AdmissionTest, AGuessAboveTheBudgetIsCappedInsteadOfRunAlone) {
  AdmissionPolicy policy;
  const uint64_t budget = 6 * kGiB, reserve = policy.Reserve(budget);
  Candidate guess = Cand(1, 8 * kGiB, "nvcc");
  guess.from_prior = true;
  EXPECT_EQ(policy.AdmittedPeak(guess, budget), budget - reserve);
  AdmissionDecision first = policy.Decide(Reading(budget, budget), {}, guess, 0);
  EXPECT_TRUE(first.admit);
  EXPECT_FALSE(first.over_budget) << "a guess is no reason to run alone: " << first.reason;
  // A measured figure above the budget is evidence: that job still runs alone.
  Candidate measured = Cand(2, 8 * kGiB, "nvcc");
  EXPECT_EQ(policy.AdmittedPeak(measured, budget), 8 * kGiB);
  EXPECT_TRUE(policy.Decide(Reading(budget, budget), {}, measured, 0).over_budget);
  // A guess below the cap is counted as it is.
  Candidate small = Cand(3, 1 * kGiB, "g++");
  small.from_prior = true;
  EXPECT_EQ(policy.AdmittedPeak(small, budget), 1 * kGiB);
}

TEST(AdmissionTest, UnderTheBuildGuardAGuessIsCountedAtHalfSoLighterWorkRunsBesideTheProbe) {
  const uint64_t budget = 6 * kGiB;
  AdmissionPolicy unguarded;
  AdmissionPolicy guarded({.guarded = true});
  const uint64_t room = budget - guarded.Reserve(budget);
  Candidate probe = Cand(1, 8 * kGiB, "nvcc");
  probe.from_prior = true;
  EXPECT_EQ(guarded.AdmittedPeak(probe, budget), room / 2);
  // The probe runs at 1 GiB; a C++ compile guessed at 768 MiB waits beside it unguarded, starts guarded.
  Candidate cxx = Cand(2, 768 * kMiB, "g++");
  cxx.from_prior = true;
  std::vector<RunningJob> unguarded_running = {Running(1, unguarded.AdmittedPeak(probe, budget), 1 * kGiB)};
  std::vector<RunningJob> guarded_running = {Running(1, guarded.AdmittedPeak(probe, budget), 1 * kGiB)};
  MemoryReading reading = Reading(budget, budget - 1 * kGiB);
  EXPECT_FALSE(unguarded.Decide(reading, unguarded_running, cxx, 1'000).admit);
  EXPECT_TRUE(guarded.Decide(reading, guarded_running, cxx, 1'000).admit);
}

// A box holds headroom itself (in a pip build also pip and python) besides the build's jobs. A guess is capped at a
// share of what the budget leaves for the jobs, so that the two probes of an unmeasured family start together
// (counted against the whole budget, in the real-nvcc benchmark's 4 GiB box the second one missed by a few MiB and
// started 4.5 s late).
TEST(AdmissionTest, TwoCappedGuessesFitBesideWhatRunsOutsideTheJobs) {
  AdmissionPolicy guarded({.guarded = true});
  const uint64_t budget = 4 * kGiB, outside = 40 * kMiB;
  const MemoryReading reading = Reading(budget, budget - outside);
  EXPECT_EQ(guarded.OutsideUsage(reading, {}), outside);
  AdmissionPass pass(guarded, reading, {}, 0);
  Candidate probe = Cand(1, 2 * kGiB, "nvcc -DV=0");
  probe.family_key = "nvcc -DV";
  probe.unknown_heavy = probe.from_prior = true;
  const AdmissionDecision first = pass.Consider(probe);
  ASSERT_TRUE(first.admit) << first.reason;
  EXPECT_EQ(first.counted_peak, (budget - guarded.Reserve(budget) - outside) / 2);
  Candidate second = probe;
  second.id = 2;
  second.class_key = "nvcc -DV=1";
  const AdmissionDecision next = pass.Consider(second);
  EXPECT_TRUE(next.admit) << next.reason;
  EXPECT_EQ(next.counted_peak, first.counted_peak);
}

TEST(AdmissionTest, UnderTheBuildGuardAnUnmeasuredFamilyIsBetOnWhileAnotherWholeGuessWouldStillFit) {
  AdmissionPolicy guarded({.guarded = true});
  std::vector<RunningJob> running = {Running(1, 4 * kGiB, 1 * kGiB, 0, "nvcc -DV=1"),
                                     Running(2, 4 * kGiB, 1 * kGiB, 0, "nvcc -DV=2")};
  for (RunningJob& job : running) {
    job.family_key = "nvcc -DV";
    job.last_growth_ms = 1'000;
  }
  Candidate sibling = Cand(3, 4 * kGiB, "nvcc -DV=3");
  sibling.family_key = "nvcc -DV";
  sibling.unknown_heavy = sibling.from_prior = true;
  // 60 GiB free: after this one, another whole 4 GiB guess still fits.
  EXPECT_TRUE(guarded.Decide(Reading(64 * kGiB, 60 * kGiB), running, sibling, 2'000).admit);
  // 10 GiB free: room for this one but not for a joint overshoot, and two members already climb: it waits for
  // them to peak, as it would without the guard.
  EXPECT_EQ(guarded.Decide(Reading(64 * kGiB, 10 * kGiB), running, sibling, 2'000).wait, WaitKind::kProbe);
  // Without the guard it waits for them to peak once a guess twice too low for all three would not fit.
  EXPECT_EQ(AdmissionPolicy().Decide(Reading(64 * kGiB, 20 * kGiB), running, sibling, 2'000).wait, WaitKind::kProbe);
}

// A 64-core machine must not idle 63 cores while one probe climbs to its peak: more members climb beside it while a
// guess twice too low for every climbing member and the candidate would still fit, with or without the guard.
TEST(AdmissionTest, AProbeIsNotWaitedForWhileAGuessTwiceTooLowForAllStillFits) {
  AdmissionPolicy policy;
  std::vector<RunningJob> running;
  Candidate sibling = Cand(100, 6 * kGiB, "flash");
  sibling.family_key = "flash";
  sibling.unknown_heavy = sibling.from_prior = true;
  auto climb = [&](int members) {
    running.clear();
    for (int id = 1; id <= members; ++id) {
      running.push_back(Running(static_cast<uint64_t>(id), 6 * kGiB, 1 * kGiB, 0, "flash"));
      running.back().family_key = "flash";
    }
    return policy.Decide(Reading(256 * kGiB, 250 * kGiB), running, sibling, 2'000);
  };
  EXPECT_TRUE(climb(1).admit);
  // 256 - 18 held - 90 owed - 6 - 12.8 reserve = 129 to spare >= 6 GiB (twice too low) x 19 = 114.
  EXPECT_TRUE(climb(18).admit);
  // 256 - 20 - 100 - 6 - 12.8 = 117 < 126.
  EXPECT_EQ(climb(20).wait, WaitKind::kProbe);
}

TEST(AdmissionTest, UnderTheBuildGuardASecondMemberClimbsBesideTheProbeWhenItFits) {
  // A 4 GiB box: two capped guesses fit, a third does not. Without the guard the second waits for the probe to
  // peak (a real nvcc job peaks late, in ptxas, and the second core idles meanwhile); under it, the second is bet
  // on and only the third waits.
  const uint64_t budget = 4 * kGiB;
  AdmissionPolicy guarded({.guarded = true});
  AdmissionPolicy unguarded;
  Candidate member = Cand(2, 1800 * kMiB, "nvcc -DV=2");
  member.family_key = "nvcc -DV";
  member.unknown_heavy = member.from_prior = true;
  std::vector<RunningJob> running = {Running(1, 1800 * kMiB, 300 * kMiB, 0, "nvcc -DV=1")};
  running[0].family_key = "nvcc -DV";
  running[0].last_growth_ms = 1'000;
  const MemoryReading reading = Reading(budget, budget - 300 * kMiB);
  EXPECT_TRUE(guarded.Decide(reading, running, member, 2'000).admit);
  EXPECT_EQ(unguarded.Decide(reading, running, member, 2'000).wait, WaitKind::kProbe);
  running.push_back(Running(2, 1800 * kMiB, 0, 2'000, "nvcc -DV=2"));
  running[1].family_key = "nvcc -DV";
  member.id = 3;
  EXPECT_EQ(guarded.Decide(Reading(budget, budget - 300 * kMiB), running, member, 2'100).wait, WaitKind::kProbe);
  // The option at 1 restores one probe under the guard too.
  AdmissionPolicy one_probe({.guarded_probe_members = 1, .guarded = true});
  running.pop_back();
  EXPECT_EQ(one_probe.Decide(reading, running, member, 2'000).wait, WaitKind::kProbe);
}

// A job that ramps linearly to 1 GiB over its first half and holds it for the second, learned from earlier runs.
RunningJob Ramping(uint64_t id, int64_t started, int64_t duration) {
  RunningJob job = Running(id, 1 * kGiB, 0, started, "ramp");
  job.expected_end_ms = started + duration;
  job.rise.below = {32, 64, 95, 114};  // 25 % at 1/8 of the run, 50 % at 1/4, 75 % at 3/8, 90 % at 0.45
  return job;
}

TEST(AdmissionTest, ARiseBetCountsARampingJobAtWhatItHoldsWhenTheCandidateEnds) {
  AdmissionPolicy bets({.guarded = true, .rise_bets = true, .rise_horizon_factor = 1.25, .rise_time_margin = 0.9});
  const uint64_t budget = 1536 * kMiB;
  std::vector<RunningJob> running = {Ramping(1, 0, 2'000)};
  running[0].rss = running[0].peak_rss = 100 * kMiB;
  const MemoryReading reading = Reading(budget, budget - 100 * kMiB);
  // A 100 ms job ends (with its margin) at 125 ms, 0.07 of the ramping job's paced run: it holds under 25 % then.
  Candidate quick = Cand(2, 900 * kMiB);
  quick.expected_ms = 100;
  EXPECT_EQ(bets.OwedBy(running[0], 0, bets.BetHorizon(quick, 0)), 256 * kMiB - 100 * kMiB);
  EXPECT_TRUE(bets.Decide(reading, running, quick, 0).admit);
  // A long one, or one of unknown length, must sit beside the whole 1 GiB.
  Candidate slow = quick;
  slow.expected_ms = 1'500;
  EXPECT_FALSE(bets.Decide(reading, running, slow, 0).admit);
  slow.expected_ms = 0;
  EXPECT_FALSE(bets.Decide(reading, running, slow, 0).admit);
  // Without the option (or without the guard that turns it on) nothing changes.
  AdmissionPolicy plain({.guarded = true});
  EXPECT_FALSE(plain.Decide(reading, running, quick, 0).admit);
}

TEST(AdmissionTest, NoRiseBetOnAJobAboveItsCurveOrPastItsEstimateOrWithoutOne) {
  AdmissionPolicy bets({.guarded = true, .rise_bets = true});
  std::vector<RunningJob> running = {Ramping(1, 0, 2'000)};
  const int64_t until = 300;
  // Already at 600 MiB 100 ms in, where its curve said under 256 MiB: this run rises faster than the learned ones.
  running[0].rss = running[0].peak_rss = 600 * kMiB;
  EXPECT_EQ(bets.OwedBy(running[0], 100, until), bets.Owed(running[0], 100));
  running[0].rss = running[0].peak_rss = 100 * kMiB;
  EXPECT_LT(bets.OwedBy(running[0], 100, until), bets.Owed(running[0], 100));
  running[0].overran = true;
  EXPECT_EQ(bets.OwedBy(running[0], 100, until), bets.Owed(running[0], 100));
  running[0].overran = false;
  running[0].rise = RiseCurve{};
  EXPECT_EQ(bets.OwedBy(running[0], 100, until), bets.Owed(running[0], 100));
  running[0] = Ramping(1, 0, 2'000);
  running[0].expected_end_ms = -1;  // no predicted duration: no time scale for its curve
  EXPECT_EQ(bets.OwedBy(running[0], 100, until), bets.Owed(running[0], 100));
}

TEST(AdmissionPassTest, AJobAdmittedInThePassBringsItsRiseCurveForTheNext) {
  AdmissionPolicy bets({.guarded = true, .rise_bets = true});
  const uint64_t budget = 1536 * kMiB;
  AdmissionPass pass(bets, Reading(budget, budget), {}, 0);
  Candidate heavy = Cand(1, 1 * kGiB, "ramp");
  heavy.expected_ms = 2'000;
  heavy.rise.below = {32, 64, 95, 114};
  ASSERT_TRUE(pass.Consider(heavy).admit);
  // Beside the heavy one's whole 1 GiB, 900 MiB does not fit; for 100 ms it holds a quarter of it.
  Candidate quick = Cand(2, 900 * kMiB);
  quick.expected_ms = 100;
  EXPECT_TRUE(pass.Consider(quick).admit);
}

TEST(AdmissionTest, ASettledJobOwesOnlyAReturnToItsPeak) {
  AdmissionPolicy policy({.plateau_ms = 5'000, .settled_min_fraction = 0.25});
  // Estimated at 11.5 GiB (its class's worst), it climbed to 6 GiB and has not grown since t=10 s.
  RunningJob job = Running(1, 11'776 * kMiB, 6 * kGiB, /*started=*/0);
  job.last_growth_ms = 10'000;
  EXPECT_EQ(policy.Owed(job, 12'000), job.Owes());  // still within the plateau window: may be climbing.
  EXPECT_EQ(policy.Owed(job, 15'000), 0u);          // settled: it has shown which member of its class it is.
  job.rss = 5 * kGiB;                               // a dip may be a pause between two phases.
  EXPECT_EQ(policy.Owed(job, 15'000), 1 * kGiB);
  job.rss = 6 * kGiB;
  // What does not count as settled: a frozen job (it cannot grow), one that overran its estimate (its model
  // is wrong), and one idling far below its estimate (a heavy compile still preprocessing).
  RunningJob frozen = job;
  frozen.frozen = true;
  EXPECT_EQ(policy.Owed(frozen, 15'000), frozen.Owes());
  RunningJob overran = job;
  overran.overran = true;
  EXPECT_EQ(policy.Owed(overran, 15'000), overran.Owes());
  RunningJob idling = Running(2, 8 * kGiB, 300 * kMiB, 0);
  EXPECT_EQ(policy.Owed(idling, 15'000), idling.Owes());
  // Admission counts it: 32 GiB, two settled jobs at 6 and 8 GiB estimated at 11.5 each leave room for a third.
  RunningJob other = job;
  other.id = 3;
  other.rss = other.peak_rss = 8 * kGiB;
  std::vector<RunningJob> running = {job, other};
  MemoryReading reading = Reading(32 * kGiB, 18 * kGiB);
  EXPECT_FALSE(policy.Decide(reading, running, Cand(4, 11'776 * kMiB), 12'000).admit);
  EXPECT_TRUE(policy.Decide(reading, running, Cand(4, 11'776 * kMiB), 15'000).admit);
}

TEST(AdmissionTest, AJobSizedFromItsOwnRunsSettlesOnlyNearWhatTheyReached) {
  // Its own earlier runs peaked at 6.2 GiB (estimate 6.5). Climbing slowly (a CUTLASS kernel's cicc for minutes),
  // it has grown less than 2 % in the last 5 s at 4 GiB: for a job sized from its class that is a plateau; for one
  // sized from its own runs it is a pause, and it still owes the rest.
  AdmissionPolicy policy({.plateau_ms = 5'000, .settled_min_fraction = 0.25});
  RunningJob job = Running(1, 6'656 * kMiB, 4 * kGiB, /*started=*/0);
  job.last_growth_ms = 10'000;
  EXPECT_EQ(policy.Owed(job, 16'000), 0u) << "sized from its class: settled";
  job.own_history = true;
  EXPECT_EQ(policy.Owed(job, 16'000), job.Owes());
  // At 95 % of its estimate it has reached what its runs reached: settled, owing only a return to its peak.
  job.rss = job.peak_rss = 6'323 * kMiB;
  EXPECT_EQ(policy.Owed(job, 16'000), 0u);
}

TEST(AdmissionTest, MemoryTrackSeesASlowRampAsGrowth) {
  RunningJob job = Running(1, 16 * kGiB, 0, 0);
  // 8 GiB reached in 60 s, sampled every 250 ms: each sample adds well under 2% of what the job holds.
  for (int64_t t = 250; t <= 60'000; t += 250) MemoryTrack::Observe(&job, 8 * kGiB * t / 60'000, t);
  EXPECT_GE(job.last_growth_ms, 58'000);
  EXPECT_FALSE(AdmissionPolicy().HasPlateaued(job, 60'000));
  // Then flat: a plateau 5 s later.
  for (int64_t t = 60'250; t <= 65'000; t += 250) MemoryTrack::Observe(&job, 8 * kGiB, t);
  EXPECT_TRUE(AdmissionPolicy().HasPlateaued(job, 65'000));
  EXPECT_FALSE(job.overran);
  MemoryTrack::Observe(&job, 17 * kGiB, 65'250);
  EXPECT_TRUE(job.overran);
}

TEST(AdmissionTest, WellMeasuredJobsAreNotStaggeredWhileMemoryIsPlentiful) {
  AdmissionPolicy policy({.reserve_bytes = 1 * kGiB, .stagger_ms = 10'000});
  std::vector<RunningJob> running = {Running(1, 3 * kGiB, 1 * kGiB, /*started=*/0, "nvcc-class")};
  running[0].last_growth_ms = 1'000;
  for (uint64_t id = 10; id < 19; ++id) running.push_back(Running(id, 3 * kGiB, 1 * kGiB, 0, "nvcc-class"));
  Candidate next = Cand(2, 3 * kGiB, "nvcc-class");
  // A prior or a hint may be off by more than a well-measured figure: identical heavy jobs stay staggered once
  // the ten climbing ones and it could not all overshoot by half (40 - 20 owed - 3 - 1 reserve = 16 < 16.5) ...
  EXPECT_EQ(policy.Decide(Reading(64 * kGiB, 40 * kGiB), running, next, 2'000).wait, WaitKind::kStagger);
  // ... where a well-measured one starts at once while another of it would still fit ...
  next.measured = true;
  EXPECT_TRUE(policy.Decide(Reading(64 * kGiB, 40 * kGiB), running, next, 2'000).admit);
  running.resize(1);
  // ... and is staggered again when memory gets tight: 8 available - 2 owed - 3 for it - 1 reserve < 3.
  EXPECT_EQ(policy.Decide(Reading(64 * kGiB, 8 * kGiB), running, next, 2'000).wait, WaitKind::kStagger);
}

// A 64-core machine must not start its flash-attn kernels one per stagger_ms (ten minutes for 64): a guess is
// bet on while every climbing member of its class and it could overshoot by half together and still fit.
TEST(AdmissionTest, GuessesAreNotStaggeredWhileAJointOvershootStillFits) {
  AdmissionPolicy policy({.stagger_ms = 10'000});
  std::vector<RunningJob> running;
  for (uint64_t id = 1; id <= 20; ++id) running.push_back(Running(id, 6 * kGiB, 1 * kGiB, 0, "flash"));
  Candidate next = Cand(30, 6 * kGiB, "flash");
  // 250 available - 100 owed - 6 - 12.8 reserve = 131 to spare >= half of 21 x 6 GiB.
  EXPECT_TRUE(policy.Decide(Reading(256 * kGiB, 250 * kGiB), running, next, 2'000).admit);
  // 150 - 100 - 6 - 12.8 = 31 < 63: staggered.
  EXPECT_EQ(policy.Decide(Reading(256 * kGiB, 150 * kGiB), running, next, 2'000).wait, WaitKind::kStagger);
}

// The finished members a class or family estimate comes from are biased to the short ones (flash-attn's forward
// kernels finish first and weigh 0.6x its backward ones): what a running member already holds bounds it too.
TEST(AdmissionTest, ACandidateSizedFromItsKinNeedsWhatARunningMemberAlreadyHolds) {
  AdmissionPolicy policy;
  RunningJob bwd = Running(1, 4 * kGiB, 6 * kGiB, 0, "flash");
  bwd.family_key = "flash-family";
  Candidate fwd = Cand(2, 4 * kGiB, "flash");
  fwd.family_key = "flash-family";
  std::vector<RunningJob> running = {bwd};
  EXPECT_EQ(policy.CountedPeak(fwd, running, 256 * kGiB), 4 * kGiB);  // its own runs or a hint: no kin
  fwd.kin = KinScope::kClass;
  EXPECT_EQ(policy.CountedPeak(fwd, running, 256 * kGiB), 6 * kGiB);
  // A class estimate looks at its class only; a family estimate or a guess at the whole family.
  running[0].class_key = "flash -DOTHER";
  EXPECT_EQ(policy.CountedPeak(fwd, running, 256 * kGiB), 4 * kGiB);
  fwd.kin = KinScope::kFamily;
  EXPECT_EQ(policy.CountedPeak(fwd, running, 256 * kGiB), 6 * kGiB);
  // What admission counts for it is what it owes once admitted in the same pass.
  AdmissionPass pass(policy, Reading(256 * kGiB, 250 * kGiB), running, 0);
  const AdmissionDecision first = pass.Consider(fwd);
  ASSERT_TRUE(first.admit);
  EXPECT_EQ(first.counted_peak, 6 * kGiB);  // the running job's estimate once it starts
  EXPECT_NE(pass.Consider(fwd).reason.find("needs ~6.0 GiB"), std::string::npos);
  EXPECT_EQ(KinScopeOf(EstimateSource::kClassHistory), KinScope::kClass);
  EXPECT_EQ(KinScopeOf(EstimateSource::kFamilyHistory), KinScope::kFamily);
  EXPECT_EQ(KinScopeOf(EstimateSource::kPrior), KinScope::kFamily);
  EXPECT_EQ(KinScopeOf(EstimateSource::kEdgeHistory), KinScope::kNone);
  EXPECT_EQ(KinScopeOf(EstimateSource::kUserHint), KinScope::kNone);
}

// A job past its estimate was raised above what it holds; a short pause proves little about a wrong model, a long
// one does: it then owes nothing more, so one mis-sized kernel does not keep memory from the build for its life.
TEST(AdmissionTest, AJobPastItsEstimateSettlesOnlyAfterALongPlateau) {
  AdmissionPolicy policy({.plateau_ms = 5'000, .overrun_plateau_factor = 4.0});
  RunningJob job = Running(1, 4 * kGiB, 0, 0, "flash");
  MemoryTrack::Observe(&job, 6 * kGiB, 1'000);
  ASSERT_TRUE(job.overran);
  EXPECT_GT(policy.Owed(job, 7'000), 0u);  // a 6 s plateau
  EXPECT_FALSE(policy.HasSettled(job, 20'000));
  EXPECT_TRUE(policy.HasSettled(job, 21'000));
  EXPECT_EQ(policy.Owed(job, 21'000), 0u);
}

// On 2 CPUs at -j8 a third long compile only slows the other two, and whichever of the three comes last then runs
// alone at the end: long compute-bound jobs start only while a CPU is free of them; short and unknown ones fill -j.
TEST(AdmissionTest, LongCompilesStartOnlyWhileACpuIsFreeOfThem) {
  // Short compiles are not held here (ShortCompilesWaitForACpuLongOnesAtLeastAsUrgentKeepBusy).
  AdmissionPolicy policy({.cpus = 2, .short_compiles_fill_idle_cpus = false});
  auto compile = [](uint64_t id) {
    RunningJob job = Running(id, 1 * kGiB, 1 * kGiB, 0, "nvcc");
    job.compute_bound = true;
    job.expected_end_ms = 60'000;
    return job;
  };
  std::vector<RunningJob> running = {compile(1), compile(2)};
  Candidate next = Cand(3, 1 * kGiB, "nvcc");
  next.compute_bound = true;
  next.expected_ms = 60'000;
  const MemoryReading plenty = Reading(64 * kGiB, 60 * kGiB);
  AdmissionDecision wait = policy.Decide(plenty, running, next, 1'000);
  EXPECT_EQ(wait.wait, WaitKind::kCpu);
  EXPECT_EQ(wait.reason, "2 long compile(s) already keep the 2 CPU(s) busy");
  Candidate quick = next;
  quick.expected_ms = 3'000;
  EXPECT_TRUE(policy.Decide(plenty, running, quick, 1'000).admit);
  Candidate script = next;
  script.compute_bound = false;
  EXPECT_TRUE(policy.Decide(plenty, running, script, 1'000).admit);
  // Cold, with no duration yet: a heavy estimate counts as long, a light one does not.
  Candidate cold = next;
  cold.expected_ms = 0;
  cold.predicted_peak = 4 * kGiB;
  EXPECT_EQ(policy.Decide(plenty, running, cold, 1'000).wait, WaitKind::kCpu);
  cold.predicted_peak = 512 * kMiB;
  EXPECT_TRUE(policy.Decide(plenty, running, cold, 1'000).admit);
  // A parked compile uses no CPU; nor is there a cap where the CPUs are unknown.
  running[1].frozen = running[1].parked = true;
  EXPECT_TRUE(policy.Decide(plenty, running, next, 1'000).admit);
  running[1].frozen = running[1].parked = false;
  EXPECT_TRUE(AdmissionPolicy().Decide(plenty, running, next, 1'000).admit);
}

TEST(AdmissionTest, ShortCompilesWaitForACpuLongOnesAtLeastAsUrgentKeepBusy) {
  AdmissionPolicy policy({.cpus = 2});
  auto compile = [](uint64_t id, double priority) {
    RunningJob job = Running(id, 1 * kGiB, 1 * kGiB, 0, "nvcc");
    job.compute_bound = true;
    job.expected_end_ms = 60'000;
    job.priority = priority;
    return job;
  };
  std::vector<RunningJob> running = {compile(1, 2), compile(2, 2)};
  Candidate quick = Cand(3, 512 * kMiB, "g++");
  quick.compute_bound = true;
  quick.expected_ms = 3'000;
  quick.priority = 2;
  const MemoryReading plenty = Reading(64 * kGiB, 60 * kGiB);
  AdmissionDecision wait = policy.Decide(plenty, running, quick, 1'000);
  EXPECT_EQ(wait.wait, WaitKind::kCpu);
  EXPECT_EQ(wait.reason, "2 compile(s) keep the 2 CPU(s) busy beside 2 long one(s); a short one fills a CPU when one frees");
  // Cold, with no duration: a light compile counts as short and waits the same.
  Candidate cold = quick;
  cold.expected_ms = 0;
  EXPECT_EQ(policy.Decide(plenty, running, cold, 1'000).wait, WaitKind::kCpu);
  // A chain after it makes it more urgent than one of them: it starts, sharing that one's CPU.
  Candidate urgent = quick;
  urgent.priority = 3;
  running[1].priority = 4;
  EXPECT_TRUE(policy.Decide(plenty, running, urgent, 1'000).admit);
  running[1].priority = 2;
  EXPECT_TRUE(policy.Decide(plenty, running, urgent, 1'000).admit);
  // Beside a long compile, only a CPU no compile keeps busy takes one: a short compile holds the other CPU ...
  running[1].expected_end_ms = 5'000;
  EXPECT_EQ(policy.Decide(plenty, running, quick, 1'000).wait, WaitKind::kCpu);
  // ... a parked compile or a tool that is not a compiler does not.
  running[1].compute_bound = false;
  EXPECT_TRUE(policy.Decide(plenty, running, quick, 1'000).admit);
  running[1].compute_bound = true;
  running[1].expected_end_ms = 60'000;
  running[1].frozen = running[1].parked = true;
  EXPECT_TRUE(policy.Decide(plenty, running, quick, 1'000).admit);
  running[1].frozen = running[1].parked = false;
  Candidate script = quick;
  script.compute_bound = false;
  EXPECT_TRUE(policy.Decide(plenty, running, script, 1'000).admit);
  // With no long compile running, short ones fill -j as ninja's would.
  for (RunningJob& job : running) job.expected_end_ms = 5'000;
  EXPECT_TRUE(policy.Decide(plenty, running, quick, 1'000).admit);
  for (RunningJob& job : running) job.expected_end_ms = 60'000;
  // Cold, with no duration: a compile counts as long while it was heavy when it started (a probe's estimate
  // lowered once it settled says nothing of its length) or once it has run long_job_ms. One CPU, one compile.
  AdmissionPolicy one_cpu({.cpus = 1});
  std::vector<RunningJob> probe = {running[1]};
  probe[0].expected_end_ms = -1;
  probe[0].heavy = true;
  probe[0].predicted_peak = 1 * kGiB;
  EXPECT_EQ(one_cpu.Decide(plenty, probe, quick, 1'000).wait, WaitKind::kCpu);
  probe[0].heavy = false;
  EXPECT_TRUE(one_cpu.Decide(plenty, probe, quick, 1'000).admit);
  EXPECT_EQ(one_cpu.Decide(plenty, probe, quick, 10'000).wait, WaitKind::kCpu);
}

TEST(AdmissionTest, PlanTickCountsEachAdmissionBeforeTheNext) {
  AdmissionPolicy policy({.reserve_bytes = 1 * kGiB});
  std::vector<Candidate> ready;
  for (uint64_t id = 1; id <= 10; ++id) ready.push_back(Cand(id, 3 * kGiB, fmt::format("c{}", id)));
  auto tick = policy.PlanTick(Reading(16 * kGiB, 13 * kGiB), {}, ready, 8, 0);
  EXPECT_EQ(tick.admitted, (std::vector<uint64_t>{1, 2, 3, 4}));  // 4 x 3 + 1 reserve = 13.
  EXPECT_NE(tick.head_reason.find("needs ~3.0 GiB"), std::string::npos);
  // CPU slots still bound the batch.
  EXPECT_EQ(policy.PlanTick(Reading(64 * kGiB, 64 * kGiB), {}, ready, 2, 0).admitted.size(), 2u);
}

TEST(AdmissionTest, LightJobsOvertakeAWaitingHeadOnlyUntilItStarves) {
  AdmissionPolicy policy({.reserve_bytes = 1 * kGiB, .starvation_ms = 60'000});
  std::vector<RunningJob> running = {Running(1, 4 * kGiB, 4 * kGiB)};
  MemoryReading reading = Reading(16 * kGiB, 8 * kGiB);
  std::vector<Candidate> ready = {Cand(2, 10 * kGiB), Cand(3, 1 * kGiB)};
  ready[0].ready_since_ms = 0;
  EXPECT_EQ(policy.PlanTick(reading, running, ready, 4, 30'000).admitted, (std::vector<uint64_t>{3}));
  EXPECT_TRUE(policy.PlanTick(reading, running, ready, 4, 60'000).admitted.empty());
}

TEST(AdmissionPassTest, TheHeadIsTheFirstCandidateWaitingForMemoryAndAdmittedJobsCountAsRunning) {
  AdmissionPolicy policy({.reserve_bytes = 1 * kGiB, .starvation_ms = 60'000});
  MemoryReading reading = Reading(16 * kGiB, 8 * kGiB);
  AdmissionPass pass(policy, reading, {Running(1, 4 * kGiB, 4 * kGiB)}, 70'000);
  // 3 GiB fits (8 - 3 >= 1 reserve) and then owes its whole estimate: a second 3 GiB job does not fit.
  EXPECT_TRUE(pass.Consider(Cand(2, 3 * kGiB, "cc")).admit);
  Candidate starved = Cand(3, 6 * kGiB, "nvcc");
  starved.ready_since_ms = 0;
  AdmissionDecision head = pass.Consider(starved);
  EXPECT_FALSE(head.admit);
  EXPECT_EQ(head.wait, WaitKind::kMemory);
  EXPECT_TRUE(pass.stopped());
  EXPECT_EQ(pass.head_reason(), head.reason);
  // A job that would fit on its own may not overtake a head that has waited starvation_ms.
  AdmissionDecision behind = pass.Consider(Cand(4, 256 * kMiB));
  EXPECT_FALSE(behind.admit);
  EXPECT_EQ(behind.reason, "a heavier job has waited too long");
}

// Two jobs over half of budget - reserve never run together: the second waits for the first to end. Jobs behind
// it may start only if they end before then or fit in what it will leave over; otherwise each light job started
// late in the first one's run pushes the second one's start back by its own length.
TEST(AdmissionPassTest, AnExclusiveHeadKeepsMemoryFromJobsThatWouldDelayItsPredictedStart) {
  AdmissionPolicy policy({.reserve_bytes = 1 * kGiB});
  MemoryReading reading = Reading(16 * kGiB, 7 * kGiB);
  RunningJob first = Running(1, 9 * kGiB, 9 * kGiB);
  first.expected_end_ms = 10'000;
  AdmissionPass pass(policy, reading, {first}, 1'000);
  // At 10 s the head (10 GiB) fits with 16 - 1 - 10 = 5 GiB to spare.
  EXPECT_EQ(pass.Consider(Cand(2, 10 * kGiB)).wait, WaitKind::kMemory);
  Candidate long_light = Cand(3, 3 * kGiB);
  long_light.expected_ms = 20'000;
  EXPECT_TRUE(pass.Consider(long_light).admit);  // 3 of the 5 GiB spare
  Candidate second_long = Cand(4, 3 * kGiB, "another");
  second_long.expected_ms = 20'000;
  AdmissionDecision held = pass.Consider(second_long);  // fits now (7 - 3 - 3 >= 1), but not beside the head
  EXPECT_FALSE(held.admit);
  EXPECT_EQ(held.wait, WaitKind::kMemory);
  EXPECT_NE(held.reason.find("would delay a job too big to share memory"), std::string::npos) << held.reason;
  Candidate quick = Cand(5, 1 * kGiB);  // ends at 6 s, before the head can start
  quick.expected_ms = 5'000;
  EXPECT_TRUE(pass.Consider(quick).admit);
  Candidate unknown = Cand(6, 1 * kGiB);  // no duration: counted against the spare (2 GiB left of it)
  AdmissionPass roomy(policy, reading, {first}, 1'000);
  roomy.Consider(Cand(2, 10 * kGiB));
  EXPECT_TRUE(roomy.Consider(unknown).admit);
}

// Early starts (AdmissionConfig::early_starts): a 10 GiB head of 20 s waits for a 9 GiB job that ends at 10 s.
AdmissionConfig EarlyStarts() { return {.reserve_bytes = 1 * kGiB, .early_starts = true}; }

Candidate MeasuredHead(uint64_t id, uint64_t peak, int64_t expected_ms) {
  Candidate head = Cand(id, peak);
  head.measured = true;
  head.expected_ms = expected_ms;
  return head;
}

TEST(AdmissionPassTest, AMeasuredExclusiveHeadStartsEarlyWhenItsMemoryIsPredictedFreeWithinItsLead) {
  AdmissionPolicy policy(EarlyStarts());
  RunningJob first = Running(1, 9 * kGiB, 9 * kGiB);
  first.expected_end_ms = 10'000;
  // At 3 s the memory is 7 s away, more than 0.3 x 20 s: it waits.
  AdmissionPass early_on(policy, Reading(16 * kGiB, 7 * kGiB), {first}, 3'000);
  EXPECT_EQ(early_on.Consider(MeasuredHead(2, 10 * kGiB, 20'000)).wait, WaitKind::kMemory);
  // At 5 s, 5 s away: it starts, says why, and counts as running with its whole estimate, so nothing else fits.
  AdmissionPass pass(policy, Reading(16 * kGiB, 7 * kGiB), {first}, 5'000);
  AdmissionDecision started = pass.Consider(MeasuredHead(2, 10 * kGiB, 20'000));
  EXPECT_TRUE(started.admit) << started.reason;
  EXPECT_TRUE(started.early_start);
  EXPECT_NE(started.reason.find("started early: the memory it needs is predicted free in 5.0s"), std::string::npos)
      << started.reason;
  AdmissionDecision next = pass.Consider(Cand(3, 1 * kGiB));
  EXPECT_FALSE(next.admit);
  EXPECT_EQ(pass.head_reason(), next.reason) << "the next waiting candidate is the head now";
}

TEST(AdmissionPassTest, NoEarlyStartForAGuessAJobWithoutADurationOrWithTheOptionOff) {
  RunningJob first = Running(1, 9 * kGiB, 9 * kGiB);
  first.expected_end_ms = 10'000;
  const MemoryReading reading = Reading(16 * kGiB, 7 * kGiB);
  Candidate guess = MeasuredHead(2, 10 * kGiB, 20'000);
  guess.measured = false;
  Candidate no_duration = MeasuredHead(2, 10 * kGiB, 0);
  AdmissionPolicy policy(EarlyStarts());
  for (const Candidate& head : {guess, no_duration}) {
    AdmissionPass pass(policy, reading, {first}, 9'000);
    EXPECT_FALSE(pass.Consider(head).admit);
  }
  AdmissionPolicy off({.reserve_bytes = 1 * kGiB});
  AdmissionPass pass(off, reading, {first}, 9'000);
  EXPECT_FALSE(pass.Consider(MeasuredHead(2, 10 * kGiB, 20'000)).admit);
}

TEST(AdmissionTest, AnEarlyStartIsParkedBeforeTheCapAndResumedOnceItsMemoryIsFree) {
  AdmissionPolicy policy(EarlyStarts());
  RunningJob first = Running(1, 9 * kGiB, 9 * kGiB);
  RunningJob head = Running(2, 10 * kGiB, 2 * kGiB, 9'000, "heavy");
  head.early = true;
  // 16 - 9 - 2 = 5 GiB free beside the first job: room enough (above twice the reserve), it grows on.
  std::vector<RunningJob> running = {first, head};
  EXPECT_EQ(policy.CheckEarlyStart(Reading(16 * kGiB, 5 * kGiB), running, running[1], 9'500).step,
            AdmissionPolicy::EarlyStep::kNone);
  // At 5.5 GiB it has 1.5 GiB left, under twice the reserve: parked.
  running[1].rss = running[1].peak_rss = 5'632 * kMiB;
  AdmissionPolicy::EarlyCheck park =
      policy.CheckEarlyStart(Reading(16 * kGiB, 1'536 * kMiB), running, running[1], 9'600);
  EXPECT_EQ(park.step, AdmissionPolicy::EarlyStep::kPark);
  EXPECT_NE(park.reason.find("started early and reached what the other jobs leave"), std::string::npos) << park.reason;
  // Parked, it does not stop other admissions the way a job frozen for lack of memory does.
  running[1].frozen = running[1].parked = true;
  AdmissionDecision small = policy.Decide(Reading(16 * kGiB, 1'536 * kMiB), running, Cand(3, 64 * kMiB), 9'700);
  EXPECT_NE(small.wait, WaitKind::kFrozen) << small.reason;
  // The first job ended: its memory is free and the head's remaining growth fits above the reserve.
  std::vector<RunningJob> after = {running[1]};
  EXPECT_EQ(policy.CheckEarlyStart(Reading(16 * kGiB, 10 * kGiB), after, after[0], 10'100).step,
            AdmissionPolicy::EarlyStep::kResume);
  // One that was never parked simply wins its bet; a job not started early is none of this check's business.
  after[0].frozen = after[0].parked = false;
  EXPECT_EQ(policy.CheckEarlyStart(Reading(16 * kGiB, 10 * kGiB), after, after[0], 10'100).step,
            AdmissionPolicy::EarlyStep::kWon);
  after[0].early = false;
  EXPECT_EQ(policy.CheckEarlyStart(Reading(16 * kGiB, 10 * kGiB), after, after[0], 10'100).step,
            AdmissionPolicy::EarlyStep::kNone);
}

TEST(AdmissionTest, AFastClimbingEarlyStartIsParkedFurtherFromTheCap) {
  AdmissionPolicy policy(EarlyStarts());  // reserve 1 GiB: parked under 2 GiB left, unless it climbs faster
  RunningJob first = Running(1, 9 * kGiB, 9 * kGiB);
  // 4 GiB in its first 100 ms: the next 100 ms may take another 4 GiB, more than the 3 GiB left beside the first.
  RunningJob fast = Running(2, 10 * kGiB, 4 * kGiB, 10'000, "heavy");
  fast.early = true;
  std::vector<RunningJob> running = {first, fast};
  EXPECT_EQ(policy.ParkMargin(running[1], 1 * kGiB, 10'100), 4 * kGiB);
  EXPECT_EQ(policy.CheckEarlyStart(Reading(16 * kGiB, 3 * kGiB), running, running[1], 10'100).step,
            AdmissionPolicy::EarlyStep::kPark);
  // Parked a second after those 100 ms, it is still that fast a climber: time parked is not time climbing.
  RunningJob parked = running[1];
  parked.Park(10'100);
  EXPECT_EQ(policy.ParkMargin(parked, 1 * kGiB, 11'100), 4 * kGiB);
  parked.Climb(11'100);  // thawed to climb at 11'100, then parked again at 11'200 with 5 GiB
  parked.rss = parked.peak_rss = 5 * kGiB;
  EXPECT_EQ(policy.ParkMargin(parked, 1 * kGiB, 11'200), 2'560 * kMiB);  // 5 GiB in 200 ms of climbing
  // The same 4 GiB over 10 s: 40 MiB in 100 ms, so twice the reserve is the margin and 3 GiB is room enough.
  running[1].started_ms = running[1].last_growth_ms = 100;
  EXPECT_EQ(policy.ParkMargin(running[1], 1 * kGiB, 10'100), 2 * kGiB);
  EXPECT_EQ(policy.CheckEarlyStart(Reading(16 * kGiB, 3 * kGiB), running, running[1], 10'100).step,
            AdmissionPolicy::EarlyStep::kNone);
}

TEST(AdmissionTest, AParkedEarlyStartClimbsIntoRoomThatFreesUpBesideIt) {
  AdmissionPolicy policy(EarlyStarts());  // reserve 1 GiB: a slow climber's park margin is 2 GiB
  RunningJob first = Running(1, 8 * kGiB, 8 * kGiB);
  RunningJob head = Running(2, 10 * kGiB, 4 * kGiB, 9'000, "heavy");
  head.early = head.parked = head.frozen = true;
  head.parked_since_ms = 9'500;  // 4 GiB in 500 ms of climbing: 0.8 GiB in 100 ms, under twice the reserve
  std::vector<RunningJob> running = {first, head};
  // 3 GiB free beside it: under twice its margin, it stays parked (a climb must be worth the thaw and freeze).
  EXPECT_EQ(policy.CheckEarlyStart(Reading(16 * kGiB, 3 * kGiB), running, running[1], 10'000).step,
            AdmissionPolicy::EarlyStep::kNone);
  // 4 GiB: it climbs into them, and stays an early start (it may be parked again), though the 6 GiB it still
  // owes do not fit until the first job ends.
  AdmissionPolicy::EarlyCheck climb =
      policy.CheckEarlyStart(Reading(16 * kGiB, 4 * kGiB), running, running[1], 10'000);
  EXPECT_EQ(climb.step, AdmissionPolicy::EarlyStep::kClimb);
  EXPECT_NE(climb.reason.find("it climbs until"), std::string::npos) << climb.reason;
  // Climbing, it is parked again at its margin.
  running[1].Climb(10'000);
  running[1].rss = running[1].peak_rss = 6 * kGiB;
  EXPECT_EQ(policy.CheckEarlyStart(Reading(16 * kGiB, 1'536 * kMiB), running, running[1], 10'200).step,
            AdmissionPolicy::EarlyStep::kPark);
}

TEST(AdmissionTest, AnEarlyStartCountsItsFirstParkOnlyAndClimbsOnlyWhileThawed) {
  RunningJob head = Running(2, 10 * kGiB, 2 * kGiB, 1'000, "heavy");
  head.early = true;
  head.frozen = true;  // frozen by the safety net (MemoryController::Pause sets frozen): that was no park
  EXPECT_EQ(head.ClimbingMs(1'500), 500);
  EXPECT_TRUE(head.Park(1'500));  // its first park: counted
  EXPECT_TRUE(head.frozen && head.parked && head.early);
  EXPECT_EQ(head.ClimbingMs(2'500), 500);  // the second it spent parked is no climbing
  head.Climb(2'500);
  EXPECT_FALSE(head.frozen || head.parked);
  EXPECT_TRUE(head.early);  // it may be parked again
  EXPECT_EQ(head.ClimbingMs(2'700), 700);
  EXPECT_FALSE(head.Park(2'700));  // parked again: the same job, not counted twice
  EXPECT_EQ(head.ClimbingMs(3'700), 700);
  head.Resume(3'700);
  EXPECT_FALSE(head.frozen || head.parked || head.early);
  EXPECT_EQ(head.last_growth_ms, 3'700);  // its plateau starts when it may grow again
}

TEST(AdmissionPassTest, NothingIsHeldForAHeadThatIsNotExclusiveOrWaitsForAJobWithoutAPredictedEnd) {
  AdmissionPolicy policy({.reserve_bytes = 1 * kGiB});
  RunningJob unpredicted = Running(1, 9 * kGiB, 9 * kGiB);
  Candidate head = Cand(2, 10 * kGiB);
  EXPECT_FALSE(PlanHeadHold(policy, Reading(16 * kGiB, 7 * kGiB), std::vector{unpredicted}, head, 1'000));
  RunningJob predicted = unpredicted;
  predicted.expected_end_ms = 10'000;
  std::optional<HeadHold> hold = PlanHeadHold(policy, Reading(16 * kGiB, 7 * kGiB), std::vector{predicted}, head, 1'000);
  ASSERT_TRUE(hold);
  EXPECT_EQ(hold->start_ms, 10'000);
  EXPECT_EQ(hold->spare, 5 * kGiB);
  // 7 GiB is not more than half of the 15 GiB usable: two such jobs could share memory, so nothing is held.
  EXPECT_FALSE(PlanHeadHold(policy, Reading(16 * kGiB, 7 * kGiB), std::vector{predicted}, Cand(3, 7 * kGiB), 1'000));
  // A job already past its predicted end is taken to end now.
  hold = PlanHeadHold(policy, Reading(16 * kGiB, 7 * kGiB), std::vector{predicted}, head, 12'000);
  ASSERT_TRUE(hold);
  EXPECT_EQ(hold->start_ms, 12'000);
  AdmissionPolicy off({.reserve_bytes = 1 * kGiB, .hold_for_exclusive_head = false});
  AdmissionPass pass(off, Reading(16 * kGiB, 7 * kGiB), {predicted}, 1'000);  // a temporary: the pass copies it
  pass.Consider(head);
  Candidate long_job = Cand(4, 5 * kGiB + 1);
  long_job.expected_ms = 20'000;
  EXPECT_TRUE(pass.Consider(long_job).admit);  // with the hold on it would wait: over the 5 GiB spare
}

TEST(SafetyNetTest, FreezesTheYoungestNeverTheOldestAndThawsInAgeOrder) {
  AdmissionPolicy policy({.reserve_bytes = 2 * kGiB});
  SafetyNet net(policy);
  std::vector<RunningJob> running = {Running(1, 4 * kGiB, 4 * kGiB, 0), Running(2, 4 * kGiB, 4 * kGiB, 10),
                                     Running(3, 4 * kGiB, 4 * kGiB, 20)};
  // Critical (below 1 GiB), nobody grew in the last second: freeze only the youngest.
  auto actions = net.Decide(Reading(16 * kGiB, 512 * kMiB), running, 5'000);
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].kind, SafetyAction::Kind::kFreeze);
  EXPECT_EQ(actions[0].job_id, 3u);
  running[2].frozen = true;
  actions = net.Decide(Reading(16 * kGiB, 512 * kMiB), running, 5'250);
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].job_id, 2u);
  running[1].frozen = true;
  // Memory frees: thaw job 2 (older) first, and only once its remaining growth fits above the reserve.
  running[1].rss = 1 * kGiB;  // owes 3 GiB
  EXPECT_TRUE(net.Decide(Reading(16 * kGiB, 4 * kGiB), running, 5'500).empty());
  actions = net.Decide(Reading(16 * kGiB, 6 * kGiB), running, 5'750);
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].kind, SafetyAction::Kind::kThaw);
  EXPECT_EQ(actions[0].job_id, 2u);
}

TEST(SafetyNetTest, FreezesEveryGrowingJobButTheOldestAtOnce) {
  AdmissionPolicy policy({.reserve_bytes = 2 * kGiB});
  SafetyNet net(policy);
  std::vector<RunningJob> running = {Running(1, 4 * kGiB, 4 * kGiB, 0), Running(2, 4 * kGiB, 4 * kGiB, 10),
                                     Running(3, 4 * kGiB, 4 * kGiB, 20), Running(4, 1 * kGiB, 1 * kGiB, 30)};
  for (RunningJob& job : running) job.last_growth_ms = 4'900;
  running[3].last_growth_ms = 0;  // job 4 stopped growing long ago: no threat, keeps running.
  auto actions = net.Decide(Reading(16 * kGiB, 512 * kMiB), running, 5'000);
  ASSERT_EQ(actions.size(), 2u);
  EXPECT_EQ(actions[0].job_id, 3u);
  EXPECT_EQ(actions[1].job_id, 2u);
  EXPECT_EQ(actions[1].kind, SafetyAction::Kind::kFreeze);
}

TEST(SafetyNetTest, KillsTheYoungestFrozenJobWhenStillCriticalAfterAGracePeriod) {
  AdmissionPolicy policy({.reserve_bytes = 2 * kGiB});
  SafetyNet net(policy, {.kill_grace_ms = 2'000});
  std::vector<RunningJob> running = {Running(1, 8 * kGiB, 8 * kGiB, 0), Running(2, 4 * kGiB, 3 * kGiB, 10),
                                     Running(3, 4 * kGiB, 3 * kGiB, 20)};
  running[1].frozen = running[2].frozen = true;
  MemoryReading critical = Reading(16 * kGiB, 800 * kMiB);
  EXPECT_TRUE(net.Decide(critical, running, 1'000).empty());
  auto actions = net.Decide(critical, running, 3'000);
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].kind, SafetyAction::Kind::kKill);
  EXPECT_EQ(actions[0].job_id, 3u);
  // Dire (below half the critical floor): no grace.
  SafetyNet fresh(policy);
  actions = fresh.Decide(Reading(16 * kGiB, 100 * kMiB), running, 0);
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].kind, SafetyAction::Kind::kKill);
}

TEST(SafetyNetTest, TheOldestJobIsThawedAtOnceAndAloneIsNeverTouched) {
  AdmissionPolicy policy;
  SafetyNet net(policy);
  std::vector<RunningJob> running = {Running(2, 4 * kGiB, 3 * kGiB, 10)};
  running[0].frozen = true;  // the job older than it finished: it is the oldest now.
  auto actions = net.Decide(Reading(16 * kGiB, 100 * kMiB), running, 0);
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].kind, SafetyAction::Kind::kThaw);
  running[0].frozen = false;
  EXPECT_TRUE(net.Decide(Reading(16 * kGiB, 100 * kMiB), running, 0).empty());
}

TEST(RequeueTest, RaisesThenRunsAloneThenGivesUpWithAnActionableMessage) {
  RequeueDecision first = DecideRequeue(1, 2 * kGiB, 1 * kGiB, 6 * kGiB, true);
  EXPECT_EQ(first.kind, RequeueDecision::Kind::kRetry);
  EXPECT_EQ(first.new_estimate, 3 * kGiB);
  RequeueDecision second = DecideRequeue(2, 2 * kGiB, 3 * kGiB, 6 * kGiB, false);
  EXPECT_EQ(second.kind, RequeueDecision::Kind::kRetryAlone);
  EXPECT_EQ(second.new_estimate, 3 * kGiB);  // never lowered.
  RequeueDecision last = DecideRequeue(3, 7900 * kMiB, 6 * kGiB, 6 * kGiB, true);
  EXPECT_EQ(last.kind, RequeueDecision::Kind::kGiveUp);
  EXPECT_EQ(last.message,
            "OOM-killed at 7.7 GiB, budget 6.0 GiB, after 3 attempt(s): raise --mem-budget or free memory");
  // A first failure that already exceeds the budget runs alone straight away.
  EXPECT_EQ(DecideRequeue(1, 5 * kGiB, 1 * kGiB, 6 * kGiB, true).kind, RequeueDecision::Kind::kRetryAlone);
}

TEST(PriorityTest, EdgeCountMatchesNinjasDepthOrder) {
  // 0 -> 1 -> 2, and 3 alone.
  std::vector<std::vector<uint32_t>> dependents = {{1}, {2}, {}, {}};
  std::string error;
  auto w = ComputePriorities(dependents, std::vector<PriorityJob>(4), PriorityMode::kEdgeCount, 0, &error);
  ASSERT_TRUE(w) << error;
  EXPECT_EQ(*w, (std::vector<double>{3, 2, 1, 1}));
}

TEST(PriorityTest, DurationsMakeALongLeafOutrankADeepShortChain) {
  std::vector<std::vector<uint32_t>> dependents = {{1}, {2}, {}, {}};
  std::vector<PriorityJob> jobs = {{10, 0}, {10, 0}, {10, 0}, {600'000, 0}};
  std::string error;
  auto w = ComputePriorities(dependents, jobs, PriorityMode::kDuration, 0, &error);
  ASSERT_TRUE(w);
  EXPECT_GT((*w)[3], (*w)[0]);
  EXPECT_EQ((*w)[0], 30);
  // Unknown durations count as the mean known one.
  jobs[2].duration_ms = 0;
  w = ComputePriorities(dependents, jobs, PriorityMode::kDuration, 0, &error);
  EXPECT_DOUBLE_EQ((*w)[2], (10 + 10 + 600'000) / 3.0);
}

TEST(PriorityTest, MemoryModePrefersHeavyJobsOfEqualLength) {
  std::vector<std::vector<uint32_t>> dependents = {{}, {}};
  std::vector<PriorityJob> jobs = {{1000, 100 * kMiB}, {1000, 8 * kGiB}};
  std::string error;
  auto w = ComputePriorities(dependents, jobs, PriorityMode::kDurationAndMemory, 16 * kGiB, &error);
  ASSERT_TRUE(w);
  EXPECT_GT((*w)[1], (*w)[0]);
  EXPECT_DOUBLE_EQ((*w)[1], 1500.0);
  EXPECT_EQ(ParsePriorityMode("memory"), PriorityMode::kDurationAndMemory);
  EXPECT_FALSE(ParsePriorityMode("fast"));
}

TEST(PriorityTest, BuilderWeightsKeepNinjasOrderWithoutHistoryAndForQuickJobsOfAlikeMemory) {
  EXPECT_EQ(BuilderEdgeWeight(90'000, 8 * kGiB, 16 * kGiB, false).cost, 1);
  EXPECT_FALSE(BuilderEdgeWeight(90'000, 12 * kGiB, 16 * kGiB, false).exclusive);
  // Quick jobs count one second whatever their duration, so jobs of alike memory keep their manifest order...
  EXPECT_EQ(BuilderEdgeWeight(300, 4 * kMiB, 16 * kGiB, true).cost, 1000);
  EXPECT_EQ(BuilderEdgeWeight(900, 4 * kMiB, 16 * kGiB, true).cost, 1000);
  // ... but memory still orders them, in steps of 5 % of the usable memory: a quarter counts a quarter more,
  // and 4.9 % is alike to nothing.
  EXPECT_EQ(BuilderEdgeWeight(600, 4 * kGiB, 16 * kGiB, true).cost, 1250);
  EXPECT_EQ(BuilderEdgeWeight(600, 4 * kGiB + 100 * kMiB, 16 * kGiB, true).cost, 1250);
  EXPECT_EQ(BuilderEdgeWeight(600, 800 * kMiB, 16 * kGiB, true).cost, 1000);
  EXPECT_GT(BuilderEdgeWeight(200, 300 * kMiB, 1536 * kMiB, true).cost,
            BuilderEdgeWeight(200, 40 * kMiB, 1536 * kMiB, true).cost);
}

TEST(PriorityTest, BuilderWeightsGrowWithMemoryAndMarkJobsOverHalfTheUsableMemory) {
  // 10 s needing a quarter of the usable memory counts 12.5 s; needing all of it, 20 s.
  EXPECT_EQ(BuilderEdgeWeight(10'000, 4 * kGiB, 16 * kGiB, true).cost, 12'500);
  EXPECT_EQ(BuilderEdgeWeight(10'000, 32 * kGiB, 16 * kGiB, true).cost, 20'000);
  EXPECT_FALSE(BuilderEdgeWeight(10'000, 8 * kGiB, 16 * kGiB, true).exclusive);
  EXPECT_TRUE(BuilderEdgeWeight(10'000, 8 * kGiB + 1, 16 * kGiB, true).exclusive);
  // Memory control off (no usable figure): durations alone, nothing exclusive.
  EXPECT_EQ(BuilderEdgeWeight(10'000, 8 * kGiB, 0, true).cost, 10'000);
  EXPECT_FALSE(BuilderEdgeWeight(10'000, 8 * kGiB, 0, true).exclusive);
}

TEST(PriorityTest, CyclesAndBadIdsAreErrors) {
  std::string error;
  EXPECT_FALSE(ComputePriorities({{1}, {0}}, std::vector<PriorityJob>(2), PriorityMode::kEdgeCount, 0, &error));
  EXPECT_NE(error.find("cycle"), std::string::npos);
  EXPECT_FALSE(ComputePriorities({{5}}, std::vector<PriorityJob>(1), PriorityMode::kEdgeCount, 0, &error));
}

}  // namespace
}  // namespace headroom
