// Admission: avail - sum(owed by running jobs) - candidate peak >= reserve, with forward progress,
// pressure stops, staggering of identical heavy jobs and probing of unknown heavy classes.
#include "headroom/admission/admission_policy.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "headroom/estimator/estimator.h"
#include "headroom/util/byte_size.h"

namespace headroom {
namespace {

AdmissionDecision Admit(std::string reason, bool over_budget = false) {
  return {true, WaitKind::kNone, over_budget, std::move(reason)};
}

AdmissionDecision Wait(WaitKind kind, std::string reason) { return {false, kind, false, std::move(reason)}; }

AdmissionDecision Counted(AdmissionDecision admitted, uint64_t peak) {
  admitted.counted_peak = peak;
  return admitted;
}

}  // namespace

KinScope KinScopeOf(EstimateSource source) {
  switch (source) {
    case EstimateSource::kClassHistory: return KinScope::kClass;
    case EstimateSource::kFamilyHistory:
    case EstimateSource::kPrior: return KinScope::kFamily;
    case EstimateSource::kEdgeHistory:
    case EstimateSource::kUserHint: return KinScope::kNone;
  }
  return KinScope::kNone;
}

std::string DescribeDefaultReserve(std::string_view between) {
  auto rule = [](double fraction, uint64_t floor, double floor_cap) {
    return fmt::format("max({:g}% of budget, min({}, {:g}% of budget))", fraction * 100, FormatBytes(floor),
                       floor_cap * 100);
  };
  return rule(kDefaultReserveFraction, kDefaultReserveFloor, kDefaultReserveFloorMaxFraction) +
         std::string(between) + "under the build guard " +
         rule(kGuardedReserveFraction, kGuardedReserveFloor, kGuardedReserveFloorMaxFraction);
}

void MemoryTrack::Observe(RunningJob* job, uint64_t rss, int64_t now_ms) {
  job->rss = rss;
  // Measured from the level of the last noticeable growth, not from the previous sample: a slow steady
  // ramp (an 8 GiB job climbing for a minute grows < 1% per sample) must not look like a plateau.
  uint64_t noise = ScaleBytes(job->growth_mark, kGrowthFraction);
  if (rss > job->growth_mark + noise) {
    job->last_growth_ms = now_ms;
    job->growth_mark = rss;
  }
  job->peak_rss = std::max(job->peak_rss, rss);
  // A job past its estimate was mispredicted and is likely still growing: assume a quarter more, so what it
  // "owes" stays positive and admission stops counting on memory it is about to take.
  if (rss > job->predicted_peak) {
    job->overran = true;
    job->predicted_peak = ScaleBytes(rss, kOverrunFactor);
  }
}

uint64_t AdmissionPolicy::Budget(const MemoryReading& reading) const {
  if (config_.budget_bytes == 0) return reading.limit_bytes;
  if (reading.limit_bytes == 0) return config_.budget_bytes;
  return std::min(reading.limit_bytes, config_.budget_bytes);
}

uint64_t AdmissionPolicy::Reserve(uint64_t budget) const {
  if (config_.reserve_bytes != 0) return config_.reserve_bytes;
  // The floor keeps small machines from running to the last byte, but is itself capped at a share of the
  // budget: a flat 512 MiB would take a third of a 1.5 GiB container and serialise its build.
  // Under the guard a smaller one will do (see kGuardedReserveFraction).
  if (config_.guarded) {
    uint64_t floor =
        std::min(config_.guarded_reserve_floor, ScaleBytes(budget, config_.guarded_reserve_floor_max_fraction));
    return std::max(ScaleBytes(budget, config_.guarded_reserve_fraction), floor);
  }
  uint64_t floor = std::min(config_.reserve_floor, ScaleBytes(budget, config_.reserve_floor_max_fraction));
  return std::max(ScaleBytes(budget, config_.reserve_fraction), floor);
}

uint64_t AdmissionPolicy::AdmittedPeak(uint64_t predicted_peak, bool from_prior, uint64_t budget,
                                       uint64_t outside) const {
  if (!from_prior || budget == 0) return predicted_peak;
  double share = config_.guarded ? config_.guarded_prior_cap : config_.unguarded_prior_cap;
  uint64_t cap = ScaleBytes(SaturatingSub(budget, Reserve(budget) + outside), share);
  return std::max<uint64_t>(1, std::min(predicted_peak, cap));
}

uint64_t AdmissionPolicy::OutsideUsage(const MemoryReading& reading, std::span<const RunningJob> running) const {
  uint64_t build_rss = 0;
  for (const RunningJob& job : running) build_rss += job.rss;
  return SaturatingSub(SaturatingSub(Budget(reading), build_rss), Headroom(reading, running));
}

uint64_t AdmissionPolicy::CountedPeak(const Candidate& candidate, std::span<const RunningJob> running,
                                      uint64_t budget, uint64_t outside) const {
  uint64_t peak = AdmittedPeak(candidate, budget, outside);
  for (const RunningJob& job : running) {
    const bool same_family = job.family_key == candidate.family_key;
    if (candidate.unknown_heavy && same_family) peak = std::max(peak, ScaleBytes(job.peak_rss, 1.1));
    const bool kin = (candidate.kin == KinScope::kClass && job.class_key == candidate.class_key) ||
                     (candidate.kin == KinScope::kFamily && same_family);
    if (kin) peak = std::max(peak, ScaleBytes(job.peak_rss, config_.kin_floor_factor));
  }
  return peak;
}

uint64_t AdmissionPolicy::Headroom(const MemoryReading& reading, std::span<const RunningJob> running) const {
  uint64_t build_rss = 0;
  for (const RunningJob& job : running) build_rss += job.rss;
  // available covers everything on the machine/cgroup; budget - build RSS enforces a --mem-budget smaller than it.
  return std::min(reading.available_bytes, SaturatingSub(Budget(reading), build_rss));
}

bool AdmissionPolicy::IsLongCompute(bool compute_bound, int64_t duration_ms, uint64_t estimate) const {
  if (!compute_bound) return false;
  return duration_ms > 0 ? duration_ms >= config_.long_job_ms : estimate >= config_.heavy_threshold;
}

bool AdmissionPolicy::IsLongCompute(const RunningJob& job, int64_t now_ms) const {
  if (!job.compute_bound) return false;
  if (job.expected_end_ms >= 0) return job.expected_end_ms - job.started_ms >= config_.long_job_ms;
  // With no duration yet: heavy when it started (a settled probe's lowered estimate says nothing of its
  // length), or already running long_job_ms.
  return job.heavy || now_ms - job.started_ms >= config_.long_job_ms;
}

std::string AdmissionPolicy::CpuWait(std::span<const RunningJob> running, const Candidate& candidate,
                                     int64_t now_ms) const {
  if (config_.cpus <= 0 || !candidate.compute_bound) return "";
  // One walk counts the long compiles, those at least as urgent as the candidate, and every compile at least as
  // urgent. Frozen and parked jobs use no CPU.
  int long_ones = 0, urgent_long = 0, urgent_compiles = 0;
  for (const RunningJob& job : running) {
    if (job.frozen || !job.compute_bound) continue;
    const bool urgent = job.priority >= candidate.priority;
    const bool long_one = IsLongCompute(job, now_ms);
    long_ones += long_one;
    urgent_long += long_one && urgent;
    urgent_compiles += urgent;
  }
  if (IsLongCompute(candidate.compute_bound, candidate.expected_ms, candidate.predicted_peak)) {
    if (long_ones < config_.cpus) return "";
    return fmt::format("{} long compile(s) already keep the {} CPU(s) busy", long_ones, config_.cpus);
  }
  // Beside a long compile at least as urgent, short ones take only the CPUs it and other compiles leave idle:
  // more would slow it, and the longest compile is what the build's end waits for. Less urgent compiles, long
  // or short, do not hold it back: it shares their CPUs.
  if (!config_.short_compiles_fill_idle_cpus || urgent_long == 0 || urgent_compiles < config_.cpus) return "";
  return fmt::format("{} compile(s) keep the {} CPU(s) busy beside {} long one(s); a short one fills a CPU when one "
                     "frees",
                     urgent_compiles, config_.cpus, urgent_long);
}

bool AdmissionPolicy::HasPlateaued(const RunningJob& job, int64_t now_ms) const {
  return now_ms - std::max(job.last_growth_ms, job.started_ms) >= config_.plateau_ms;
}

bool AdmissionPolicy::PeakIsBehind(const RunningJob& job, int64_t now_ms) const {
  bool reached_estimate =
      static_cast<double>(job.peak_rss) >= config_.peak_passed_fraction * static_cast<double>(job.predicted_peak);
  return reached_estimate || HasPlateaued(job, now_ms);
}

bool AdmissionPolicy::HasSettled(const RunningJob& job, int64_t now_ms) const {
  // Only a plateau counts here: a job at 90% of its estimate that still grows may well pass it. Settling is for
  // a job sized from others (its class's worst member) that shows it is a lighter one. A job sized from its own
  // earlier runs will reach what they reached: below that, a pause in its growth is a phase, and a ramp slower
  // than 2 % per plateau_ms (a flash-attn kernel climbing for five minutes) looks like a plateau between two marks.
  const double least = job.own_history ? config_.settled_own_history_fraction : config_.settled_min_fraction;
  if (job.frozen || !HasPlateaued(job, now_ms)) return false;
  // Past its estimate it was raised to kOverrunFactor x what it held: its model was wrong, and a short pause
  // proves little. A plateau overrun_plateau_factor times as long does.
  if (job.overran) {
    return now_ms - std::max(job.last_growth_ms, job.started_ms) >=
           static_cast<int64_t>(config_.overrun_plateau_factor * static_cast<double>(config_.plateau_ms));
  }
  return job.peak_rss >= ScaleBytes(job.predicted_peak, least);
}

uint64_t AdmissionPolicy::Owed(const RunningJob& job, int64_t now_ms) const {
  uint64_t whole_estimate = job.Owes();
  if (!HasSettled(job, now_ms)) return whole_estimate;
  // Memory it let go since its peak may come back (a dip between two phases looks like a release).
  return std::min(whole_estimate, SaturatingSub(job.peak_rss, job.rss));
}

uint64_t AdmissionPolicy::OwedBy(const RunningJob& job, int64_t now_ms, int64_t until_ms) const {
  const uint64_t owed = Owed(job, now_ms);
  const int64_t duration = job.expected_end_ms - job.started_ms;
  if (!config_.rise_bets || until_ms < 0 || !job.rise.known() || duration <= 0 || job.overran) return owed;
  const double paced = config_.rise_time_margin * static_cast<double>(duration);
  // Above where its curve says it may be by now, this run rises faster than the ones it was learned from.
  const double now_share = static_cast<double>(now_ms - job.started_ms) / paced;
  if (job.peak_rss > ScaleBytes(job.predicted_peak, job.rise.BoundAt(now_share))) return owed;
  const double then_share = static_cast<double>(until_ms - job.started_ms) / paced;
  return std::min(owed, SaturatingSub(ScaleBytes(job.predicted_peak, job.rise.BoundAt(then_share)), job.rss));
}

int64_t AdmissionPolicy::BetHorizon(const Candidate& candidate, int64_t now_ms) const {
  if (!config_.rise_bets || candidate.expected_ms <= 0) return -1;
  return now_ms + static_cast<int64_t>(config_.rise_horizon_factor * static_cast<double>(candidate.expected_ms));
}

AdmissionPolicy::EarlyCheck AdmissionPolicy::CheckEarlyStart(const MemoryReading& reading,
                                                             std::span<const RunningJob> running,
                                                             const RunningJob& job, int64_t now_ms) const {
  const uint64_t budget = Budget(reading);
  if (!job.early || budget == 0) return {};
  int64_t room = static_cast<int64_t>(Headroom(reading, running));
  for (const RunningJob& other : running) {
    if (&other != &job) room -= static_cast<int64_t>(Owed(other, now_ms));
  }
  const int64_t reserve = static_cast<int64_t>(Reserve(budget));
  if (room >= reserve + static_cast<int64_t>(job.Owes())) {
    return {job.parked ? EarlyStep::kResume : EarlyStep::kWon,
            fmt::format("{} free beside the other jobs", FormatBytes(static_cast<uint64_t>(room)))};
  }
  const int64_t margin = static_cast<int64_t>(ParkMargin(job, static_cast<uint64_t>(reserve), now_ms));
  if (job.parked && room >= 2 * margin) {
    return {EarlyStep::kClimb, fmt::format("{} free beside the other jobs; it climbs until {} are left",
                                           FormatBytes(static_cast<uint64_t>(room)),
                                           FormatBytes(static_cast<uint64_t>(margin)))};
  }
  if (!job.parked && room < margin) {
    return {EarlyStep::kPark, fmt::format("started early and reached what the other jobs leave ({} left)",
                                          FormatBytes(static_cast<uint64_t>(std::max<int64_t>(room, 0))))};
  }
  return {};
}

bool RunningJob::Park(int64_t now_ms) {
  const bool first = parked_since_ms < 0;
  frozen = parked = true;
  parked_since_ms = now_ms;
  return first;
}

void RunningJob::Climb(int64_t now_ms) {
  if (parked) parked_for_ms += now_ms - parked_since_ms;
  frozen = parked = false;
}

void RunningJob::Resume(int64_t now_ms) {
  frozen = parked = early = false;
  last_growth_ms = now_ms;
}

int64_t RunningJob::ClimbingMs(int64_t now_ms) const {
  const int64_t parked_for = parked_for_ms + (parked ? now_ms - parked_since_ms : 0);
  return now_ms - started_ms - parked_for;
}

uint64_t AdmissionPolicy::ParkMargin(const RunningJob& job, uint64_t reserve, int64_t now_ms) const {
  // Time parked is not time climbing: counted, it would slow the pace and shrink the margin of a parked job
  // (which then climbs again at its old pace, the moment the margin is half the room).
  const int64_t climbed_for = std::max<int64_t>(1, job.ClimbingMs(now_ms));
  const double bytes_per_ms = static_cast<double>(job.peak_rss) / static_cast<double>(climbed_for);
  return std::max(2 * reserve,
                  static_cast<uint64_t>(std::llround(bytes_per_ms * static_cast<double>(config_.park_lookahead_ms))));
}

std::string AdmissionPolicy::StaggerWait(std::span<const RunningJob> running, const Candidate& candidate,
                                         uint64_t peak, uint64_t spare_after, int64_t now_ms) const {
  // Staggering guards against identical jobs overshooting their estimates together. A well-measured estimate
  // is seldom far off: when another whole one would still fit after this job, a joint overshoot fits too,
  // and starting it now risks nothing. Priors, hints and thinly sampled classes can be off by any factor,
  // except under the build guard, where a joint overshoot costs a freeze or a requeue and never a kernel OOM
  // kill: there a guess is bet on too while another whole one would still fit.
  bool roomy = (candidate.measured || config_.guarded) && spare_after >= peak;
  // An unmeasured family is probed by one member, whatever its defines, until a member has peaked: from then on
  // its members are sized from that peak (and never below their guess, see Decide) and only staggered like
  // identical jobs, not held back one per peak.
  if (candidate.unknown_heavy && !roomy) {
    bool family_peaked = false;
    const RunningJob* climbing = nullptr;
    int climbing_members = 0;
    for (const RunningJob& job : running) {
      if (job.family_key != candidate.family_key) continue;
      if (PeakIsBehind(job, now_ms)) family_peaked = true;
      else if (++climbing_members == 1) climbing = &job;
    }
    const int probes = config_.guarded ? config_.guarded_probe_members : 1;
    // Unless a guess twice too low for every climbing member and this one would still fit.
    const bool joint_fits =
        spare_after >= ScaleBytes(peak, config_.probe_joint_overshoot * static_cast<double>(climbing_members + 1));
    if (climbing && !family_peaked && climbing_members >= probes && !joint_fits) {
      return fmt::format("probing an unmeasured heavy family: waiting for job {} to peak (at {} so far)",
                         climbing->id, FormatBytes(climbing->peak_rss));
    }
  }
  // Nor does staggering while every climbing member of the class, and this one, could overshoot by
  // joint_overshoot of its estimate at once and still fit: a large machine then starts dozens of them together
  // where staggering would start one per stagger_ms (64 flash-attn kernels on 64 cores: ten minutes).
  int climbing = 0;
  for (const RunningJob& job : running) climbing += job.class_key == candidate.class_key && !PeakIsBehind(job, now_ms);
  if (spare_after >= ScaleBytes(peak, config_.joint_overshoot * static_cast<double>(climbing + 1))) roomy = true;
  for (const RunningJob& job : running) {
    if (job.class_key != candidate.class_key || PeakIsBehind(job, now_ms)) continue;
    if (!roomy && candidate.predicted_peak >= config_.heavy_threshold && now_ms - job.started_ms < config_.stagger_ms) {
      return fmt::format("staggering identical heavy jobs: job {} started {:.1f}s ago and has not peaked", job.id,
                         static_cast<double>(now_ms - job.started_ms) / 1000.0);
    }
  }
  return "";
}

// Within the build's budget with its reserve, or (a budget below the limit, e.g. --mem-budget) within the limit.
bool AdmissionPolicy::CouldFitOnceOthersEnd(const MemoryReading& reading, uint64_t budget, uint64_t peak,
                                            uint64_t reserve) {
  return SaturatingAdd(peak, reserve) <= budget || peak <= reading.limit_bytes;
}

AdmissionDecision AdmissionPolicy::Decide(const MemoryReading& reading, std::span<const RunningJob> running,
                                          const Candidate& candidate, int64_t now_ms) const {
  uint64_t budget = Budget(reading);
  if (budget == 0) return Counted(Admit("memory limit unknown: admission by CPU slots only"), candidate.predicted_peak);
  uint64_t reserve = Reserve(budget);
  uint64_t headroom = Headroom(reading, running);
  // Its kin's running members, an unmeasured heavy family's probe among them, show what it may need.
  // A guess is capped at a share of what the budget leaves beside what runs outside the build's jobs.
  uint64_t peak = CountedPeak(candidate, running, budget, OutsideUsage(reading, running));
  uint64_t owed = 0;
  const int64_t horizon = BetHorizon(candidate, now_ms);
  for (const RunningJob& job : running) owed += OwedBy(job, now_ms, horizon);
  bool fits = headroom >= owed + peak + reserve;
  std::string need = fmt::format("needs ~{}, {} left after running jobs", FormatBytes(peak),
                                 FormatBytes(SaturatingSub(headroom, owed)));

  if (running.empty()) {
    // Forward progress: with nothing running, waiting cannot free anything...
    if (fits) return Counted(Admit(need), peak);
    // ...unless other builds sharing this memory run jobs and it could run once they gave memory back: theirs end,
    // so the machine progresses, and a start beside them would only make a guard (or the kernel) kill a job. That
    // holds for a job over this build's budget too, as long as it fits the memory limit: it succeeds alone, and
    // beside them it was killed attempt after attempt. Only a job larger than the limit gains nothing from waiting.
    if (reading.other_builds_busy > 0 && CouldFitOnceOthersEnd(reading, budget, peak, reserve)) {
      return Wait(WaitKind::kMemory, fmt::format("{}; waiting for {} other headroom build(s) to free memory", need,
                                                 reading.other_builds_busy));
    }
    return Counted(Admit(fmt::format("{}; over budget {} (reserve {}), running it alone", need, FormatBytes(budget),
                                     FormatBytes(reserve)),
                         /*over_budget=*/true),
                   peak);
  }
  if (candidate.must_run_alone) {
    return Wait(WaitKind::kAlone, fmt::format("runs alone after an earlier failure: waiting for {} running job(s)",
                                              running.size()));
  }
  auto alone = std::find_if(running.begin(), running.end(), [](const RunningJob& j) { return j.runs_alone; });
  if (alone != running.end()) return Wait(WaitKind::kAlone, fmt::format("job {} runs alone", alone->id));
  // A parked early start waits for memory it is already counted for; it stops nobody else.
  size_t frozen =
      std::count_if(running.begin(), running.end(), [](const RunningJob& j) { return j.frozen && !j.parked; });
  if (frozen > 0) return Wait(WaitKind::kFrozen, fmt::format("{} job(s) frozen for lack of memory", frozen));
  if (reading.pressure_some_pct > config_.pressure_some_pct) {
    return Wait(WaitKind::kPressure, fmt::format("memory pressure: stalled {:.1f}% of the time (limit {:.1f}%)",
                                                 reading.pressure_some_pct, config_.pressure_some_pct));
  }
  if (headroom < reserve) {
    return Wait(WaitKind::kPressure,
                fmt::format("only {} available, below the reserve {}", FormatBytes(headroom), FormatBytes(reserve)));
  }
  std::string cpu_wait = CpuWait(running, candidate, now_ms);
  if (!cpu_wait.empty()) return Wait(WaitKind::kCpu, std::move(cpu_wait));
  std::string stagger = StaggerWait(running, candidate, peak, SaturatingSub(headroom, owed + peak + reserve), now_ms);
  if (!stagger.empty()) {
    return Wait(candidate.unknown_heavy ? WaitKind::kProbe : WaitKind::kStagger, std::move(stagger));
  }
  if (!fits) return Wait(WaitKind::kMemory, fmt::format("{} (reserve {})", need, FormatBytes(reserve)));
  return Counted(Admit(need), peak);
}

AdmissionPolicy::TickResult AdmissionPolicy::PlanTick(const MemoryReading& reading,
                                                      std::span<const RunningJob> running,
                                                      std::span<const Candidate> ready, int free_slots,
                                                      int64_t now_ms) const {
  TickResult result;
  AdmissionPass pass(*this, reading, std::vector<RunningJob>(running.begin(), running.end()), now_ms);
  // Aging: candidates ready for starvation_ms go first, whatever their priority.
  std::vector<const Candidate*> order;
  for (const Candidate& c : ready) {
    if (now_ms - c.ready_since_ms >= config_.starvation_ms) order.push_back(&c);
  }
  for (const Candidate& c : ready) {
    if (now_ms - c.ready_since_ms < config_.starvation_ms) order.push_back(&c);
  }
  for (const Candidate* candidate : order) {
    if (free_slots <= 0 || pass.stopped()) break;
    AdmissionDecision decision = pass.Consider(*candidate);
    if (!decision.admit) continue;
    result.admitted.push_back(candidate->id);
    result.counted.push_back(decision.counted_peak);
    if (decision.over_budget) result.over_budget.push_back(candidate->id);
    --free_slots;
  }
  result.head_reason = pass.head_reason();
  return result;
}

std::optional<HeadHold> PlanHeadHold(const AdmissionPolicy& policy, const MemoryReading& reading,
                                     std::span<const RunningJob> running, const Candidate& head, int64_t now_ms) {
  const uint64_t budget = policy.Budget(reading);
  if (budget == 0) return std::nullopt;
  const uint64_t reserve = policy.Reserve(budget);
  const uint64_t need = policy.AdmittedPeak(head, budget);
  // Only an exclusive head (BuilderEdgeWeight's rule): holding memory for any head costs more than it gains.
  if (need <= SaturatingSub(budget, reserve) / 2) return std::nullopt;
  // What is free above the reserve now, and what each running job gives back when it is predicted to end
  // (one already past its predicted end is taken to end now). A job with no prediction never gives back.
  struct Release {
    int64_t at_ms;
    uint64_t bytes;
  };
  std::vector<Release> releases;
  int64_t free = static_cast<int64_t>(policy.Headroom(reading, running)) - static_cast<int64_t>(reserve);
  for (const RunningJob& job : running) {
    const uint64_t owed = policy.Owed(job, now_ms);
    free -= static_cast<int64_t>(owed);
    if (job.expected_end_ms >= 0) releases.push_back({std::max(job.expected_end_ms, now_ms), job.rss + owed});
  }
  std::sort(releases.begin(), releases.end(), [](const Release& a, const Release& b) { return a.at_ms < b.at_ms; });
  for (const Release& release : releases) {
    free += static_cast<int64_t>(release.bytes);
    if (free >= static_cast<int64_t>(need)) {
      return HeadHold{head.id, need, release.at_ms, static_cast<uint64_t>(free) - need};
    }
  }
  return std::nullopt;
}

AdmissionPass::AdmissionPass(const AdmissionPolicy& policy, const MemoryReading& reading,
                             std::vector<RunningJob> running, int64_t now_ms)
    : policy_(policy), reading_(reading), running_(std::move(running)), now_ms_(now_ms) {}

AdmissionDecision AdmissionPass::Consider(const Candidate& candidate) {
  if (stopped_) return stop_decision_;
  AdmissionDecision decision = policy_.Decide(reading_, running_, candidate, now_ms_);
  if (decision.admit && !decision.over_budget) {
    if (std::optional<AdmissionDecision> held = HoldFor(candidate)) return *held;
  }
  if (!decision.admit) {
    if (!head_reason_seen_) {
      head_reason_seen_ = true;
      head_reason_ = decision.reason;
    }
    if (!head_seen_) {
      NoteHead(candidate, decision);
      if (std::optional<AdmissionDecision> early = StartEarly(candidate, decision)) return *early;
    }
    return decision;
  }
  AddRunning(candidate, decision.over_budget, decision.counted_peak);
  return decision;
}

void AdmissionPass::NoteHead(const Candidate& head, const AdmissionDecision& decision) {
  switch (decision.wait) {
    case WaitKind::kAlone:
    case WaitKind::kFrozen:
    case WaitKind::kPressure:
      stopped_ = true;  // nobody else can start either.
      stop_decision_ = decision;
      head_seen_ = true;
      return;
    case WaitKind::kMemory:
      break;
    default:
      return;  // waiting for a job of its class to peak, not for memory: the next one may be the head.
  }
  head_seen_ = true;
  // Lighter jobs may overtake a head that waits for memory, but not forever: once it waited long enough,
  // whatever frees up is its.
  if (now_ms_ - head.ready_since_ms >= policy_.config().starvation_ms) {
    stopped_ = true;
    stop_decision_ = AdmissionDecision{false, WaitKind::kMemory, false, "a heavier job has waited too long"};
    return;
  }
  if (policy_.config().hold_for_exclusive_head) hold_ = PlanHeadHold(policy_, reading_, running_, head, now_ms_);
}

std::optional<AdmissionDecision> AdmissionPass::HoldFor(const Candidate& candidate) {
  if (!hold_ || candidate.id == hold_->head_id) return std::nullopt;
  // Ending before the head can start, it takes nothing from it.
  if (candidate.expected_ms > 0 && now_ms_ + candidate.expected_ms <= hold_->start_ms) return std::nullopt;
  const uint64_t peak = policy_.AdmittedPeak(candidate, policy_.Budget(reading_));
  if (peak <= hold_->spare) {
    hold_->spare -= peak;
    return std::nullopt;
  }
  return Wait(WaitKind::kMemory,
              fmt::format("needs ~{}, would delay a job too big to share memory (~{}, predicted to fit in {:.1f}s, "
                          "{} to spare then)",
                          FormatBytes(peak), FormatBytes(hold_->head_need),
                          static_cast<double>(std::max<int64_t>(0, hold_->start_ms - now_ms_)) / 1000.0,
                          FormatBytes(hold_->spare)));
}

std::optional<AdmissionDecision> AdmissionPass::StartEarly(const Candidate& head, const AdmissionDecision& waiting) {
  const AdmissionConfig& config = policy_.config();
  if (!config.early_starts || !hold_ || hold_->head_id != head.id || waiting.wait != WaitKind::kMemory) {
    return std::nullopt;
  }
  // Only a measured head with a predicted duration: a guess may need far more, and sooner, than it says.
  if (!head.measured || head.expected_ms <= 0 || head.must_run_alone) return std::nullopt;
  const int64_t until_free = std::max<int64_t>(0, hold_->start_ms - now_ms_);
  if (static_cast<double>(until_free) > config.early_start_lead * static_cast<double>(head.expected_ms)) {
    return std::nullopt;
  }
  const uint64_t counted =
      policy_.CountedPeak(head, running_, policy_.Budget(reading_), policy_.OutsideUsage(reading_, running_));
  AddRunning(head, /*over_budget=*/false, counted);
  running_.back().early = true;
  hold_.reset();  // it holds its own memory now
  // It waited (NoteHead saw it): the next candidate that waits is the head now.
  head_seen_ = false;
  head_reason_seen_ = false;
  head_reason_.clear();
  AdmissionDecision early{true, WaitKind::kNone, false, "", /*early_start=*/true, counted};
  early.reason = fmt::format("{}; started early: the memory it needs is predicted free in {:.1f}s, and it is paused "
                             "if it gets there first",
                             waiting.reason, static_cast<double>(until_free) / 1000.0);
  return early;
}

void AdmissionPass::AddRunning(const Candidate& candidate, bool over_budget, uint64_t counted_peak) {
  RunningJob job;
  job.id = candidate.id;
  job.class_key = candidate.class_key;
  job.family_key = candidate.family_key;
  job.predicted_peak = counted_peak;
  job.started_ms = job.last_growth_ms = now_ms_;
  if (candidate.expected_ms > 0) job.expected_end_ms = now_ms_ + candidate.expected_ms;
  job.runs_alone = candidate.must_run_alone || over_budget;
  job.heavy = candidate.predicted_peak >= policy_.config().heavy_threshold;
  job.rise = candidate.rise;
  job.own_history = candidate.own_history;
  job.compute_bound = candidate.compute_bound;
  job.priority = candidate.priority;
  running_.push_back(std::move(job));
}

}  // namespace headroom
