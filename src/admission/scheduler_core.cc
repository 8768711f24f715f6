// SchedulerCore: per-job estimates and waits, admission walks, running jobs' views, early starts' parking, the
// safety net's actions and requeues after memory failures. The build and the simulator both decide through it.
#include "headroom/admission/scheduler_core.h"

#include <algorithm>
#include <climits>

#include "headroom/memory/process_group_sampler.h"  // kDefaultSampleIntervalMs

namespace headroom {

EstimateFigures EstimateFigures::Of(const Estimate& estimate) {
  EstimateFigures figures;
  figures.peak_bytes = estimate.peak_bytes;
  figures.duration_ms = estimate.duration_ms;
  figures.source = estimate.source;
  figures.unknown_heavy = estimate.unknown_heavy;
  figures.confident = estimate.confident;
  figures.rise = estimate.rise;
  return figures;
}

CoreAction CoreAction::Of(const SafetyAction& action) {
  const Kind kind = action.kind == SafetyAction::Kind::kFreeze ? Kind::kFreeze
                    : action.kind == SafetyAction::Kind::kThaw ? Kind::kThaw
                                                               : Kind::kKill;
  return {kind, action.job_id, action.reason};
}

AdmissionConfig GuardedAdmission(AdmissionConfig config) {
  config.guarded = true;
  config.early_starts = true;  // a lost bet is a pause (or at worst a requeue), never a kernel OOM kill
  config.rise_bets = true;     // likewise: a job that rises faster than before meets the safety net
  return config;
}

SchedulerCore::SchedulerCore(const AdmissionConfig& admission, const SafetyConfig& safety)
    : policy_(admission), safety_(policy_, safety) {}

// --- jobs and their estimates -------------------------------------------------------------------------

void SchedulerCore::Track(CoreJobKey job, const CoreJobTraits& traits) { jobs_[job].traits = traits; }

bool SchedulerCore::EstimateIsStale(CoreJobKey job, uint64_t generation) const {
  // Every finished job bumps the generation; the walk over waiting jobs then re-predicts each once.
  const JobState& state = jobs_.at(job);
  return !state.settled && state.estimate_generation != static_cast<uint32_t>(generation);
}

void SchedulerCore::SetEstimate(CoreJobKey job, const EstimateFigures& estimate, uint64_t generation) {
  JobState& state = StateOf(job);
  state.estimate = estimate;
  state.estimate.peak_bytes = std::max(estimate.peak_bytes, RequeueFloor(job));
  state.estimate_generation = static_cast<uint32_t>(generation);
  // Only a duration taken from the class (the job's runs gave none) or a requeue can still move it.
  state.settled = estimate.source == EstimateSource::kEdgeHistory && estimate.duration_ms > 0 && !requeues_.count(job);
}

void SchedulerCore::Forget(CoreJobKey job) {
  jobs_.erase(job);
  requeues_.erase(job);
}

uint64_t SchedulerCore::RequeueFloor(CoreJobKey job) const {
  if (requeues_.empty()) return 0;  // most builds: no lookup
  auto it = requeues_.find(job);
  return it == requeues_.end() ? 0 : it->second.floor;
}

int SchedulerCore::LimitFailures(CoreJobKey job) const {
  auto it = requeues_.find(job);
  return it == requeues_.end() ? 0 : it->second.limit_failures;
}

int SchedulerCore::MemoryFailures(CoreJobKey job) const {
  auto it = requeues_.find(job);
  return it == requeues_.end() ? 0 : it->second.memory_failures;
}

bool SchedulerCore::IsGuess(CoreJobKey job) const { return IsGuess(job, jobs_.at(job)); }

// A guess is admitted at a share of the budget on the bet that watching the job catches a miss in time; that bet
// needs the job's memory in its own processes.
bool SchedulerCore::IsGuess(CoreJobKey job, const JobState& state) const {
  return state.estimate.source == EstimateSource::kPrior && RequeueFloor(job) == 0 && !state.traits.unwatched;
}

bool SchedulerCore::SizedFromOwnRuns(CoreJobKey job) const { return SizedFromOwnRuns(job, jobs_.at(job)); }

bool SchedulerCore::SizedFromOwnRuns(CoreJobKey job, const JobState& state) const {
  // An OOM requeue's raised floor is not what its runs reached (RunningJob::own_history).
  return state.estimate.source == EstimateSource::kEdgeHistory && RequeueFloor(job) == 0;
}

Candidate SchedulerCore::CandidateFor(CoreJobKey job, double priority, int64_t now_ms) const {
  return CandidateFor(job, jobs_.at(job), priority, now_ms);
}

Candidate SchedulerCore::CandidateFor(CoreJobKey job, const JobState& state, double priority, int64_t now_ms) const {
  Candidate candidate;
  candidate.id = job;
  candidate.class_key = state.traits.class_key;
  candidate.family_key = state.traits.family_key;
  candidate.predicted_peak = state.estimate.peak_bytes;
  candidate.unknown_heavy = state.estimate.unknown_heavy;
  candidate.from_prior = IsGuess(job, state);
  candidate.measured = state.estimate.confident;
  candidate.must_run_alone = state.must_run_alone;
  candidate.ready_since_ms = state.waiting_since_ms >= 0 ? state.waiting_since_ms : now_ms;
  candidate.expected_ms = state.estimate.duration_ms;
  candidate.rise = state.estimate.rise;
  candidate.own_history = SizedFromOwnRuns(job, state);
  candidate.kin = KinScopeOf(state.estimate.source);
  candidate.compute_bound = state.traits.compute_bound;
  candidate.priority = priority;
  return candidate;
}

// --- admission ----------------------------------------------------------------------------------------

void SchedulerCore::BeginPass(const MemoryReading& reading, int64_t now_ms) {
  pass_.emplace(policy_, reading, RunningJobs(), now_ms);
  pass_waits_ = 0;
}

bool SchedulerCore::PassDone() const {
  // Once nothing more can start (alone, frozen, pressure, a starved head) or kAdmissionWalkWindow candidates were
  // refused, the rest of the ready queue is not looked at: the queue is in priority order, so what is left out is
  // what would have come last anyway.
  return pass_ && (pass_->stopped() || pass_waits_ >= kAdmissionWalkWindow);
}

CoreStep SchedulerCore::Consider(CoreJobKey job, double priority, int64_t now_ms) {
  CoreStep step;
  if (!pass_ || PassDone()) return step;
  JobState& state = StateOf(job);
  // The pass keeps memory for a head that waits for it from jobs that would delay it (AdmissionPass).
  step.decision = pass_->Consider(CandidateFor(job, state, priority, now_ms));
  step.first_refusal = pass_waits_ == 0;
  if (step.decision.admit) {
    step.kind = CoreStep::Kind::kAdmitted;
    NoteAdmitted(state, step.decision, now_ms, &step);
    return step;
  }
  ++pass_waits_;
  if (step.decision.wait == WaitKind::kCpu) {
    // A wait for a CPU is no wait for memory: explained once, never counted in the memory summary or status.
    step.kind = CoreStep::Kind::kWaitsForCpu;
    if (!state.explained_cpu_wait) {
      state.explained_cpu_wait = true;
      ++decisions_.cpu_waits;
      step.explain = true;
    }
    return step;
  }
  step.kind = CoreStep::Kind::kWaitsForMemory;
  if (state.waiting_since_ms < 0) {
    state.waiting_since_ms = now_ms;
    ++decisions_.jobs_waited;
    ++waiting_now_;
    step.began_waiting = true;
  }
  if (!state.explained_wait) {
    state.explained_wait = true;
    step.explain = true;
  }
  return step;
}

void SchedulerCore::NoteAdmitted(JobState& state, const AdmissionDecision& decision, int64_t now_ms,
                                 CoreStep* step) {
  if (state.waiting_since_ms >= 0) {
    step->waited_ms = std::min<int64_t>(now_ms - state.waiting_since_ms, INT32_MAX);
    decisions_.wait_ms_total += now_ms - state.waiting_since_ms;
    state.waiting_since_ms = -1;
    --waiting_now_;
  }
  state.explained_wait = false;
  state.early_start = decision.early_start;
  state.counted_peak = decision.counted_peak;
  if (decision.over_budget) ++decisions_.over_budget_starts;
}

uint64_t SchedulerCore::LeastWaitingNeed(uint64_t budget) const {
  if (waiting_now_ == 0) return 0;
  uint64_t least = 0;
  bool any = false;
  for (const auto& [job, state] : jobs_) {
    if (state.waiting_since_ms < 0) continue;
    const uint64_t need = policy_.AdmittedPeak(state.estimate.peak_bytes, IsGuess(job, state), budget);
    least = any ? std::min(least, need) : need;
    any = true;
  }
  return least;
}

// --- running jobs -------------------------------------------------------------------------------------

SchedulerCore::Run& SchedulerCore::Start(CoreJobKey job, CoreRunKey run_key, double priority, int64_t now_ms) {
  JobState& state = StateOf(job);
  Run run;
  run.job = job;
  RunningJob& view = run.view;
  view.id = run_key;
  view.class_key = state.traits.class_key;
  view.family_key = state.traits.family_key;
  // What admission counted for it (a guess capped, its kin's live memory); a start without a decision counts the
  // same, recomputed.
  view.predicted_peak =
      state.counted_peak != 0
          ? state.counted_peak
          : policy_.CountedPeak(CandidateFor(job, state, priority, now_ms), RunningJobs(), budget_bytes_);
  state.counted_peak = 0;
  view.started_ms = now_ms;
  view.last_growth_ms = now_ms;
  if (state.estimate.duration_ms > 0) view.expected_end_ms = now_ms + state.estimate.duration_ms;
  view.runs_alone = state.must_run_alone;
  view.rise = state.estimate.rise;
  view.own_history = SizedFromOwnRuns(job, state);
  view.compute_bound = state.traits.compute_bound;
  view.priority = priority;
  view.early = state.early_start;
  if (state.early_start) ++decisions_.early_starts;
  state.early_start = false;
  view.heavy = state.estimate.peak_bytes >= policy_.config().heavy_threshold;
  return runs_.insert_or_assign(run_key, std::move(run)).first->second;
}

void SchedulerCore::Observe(CoreRunKey run_key, uint64_t bytes, int64_t now_ms, int64_t rise_ms) {
  Run* run = FindRun(run_key);
  if (!run) return;
  MemoryTrack::Observe(&run->view, bytes, now_ms);
  run->rise.Sample(rise_ms, bytes);
}

SchedulerCore::Run* SchedulerCore::FindRun(CoreRunKey run_key) {
  auto it = runs_.find(run_key);
  return it == runs_.end() ? nullptr : &it->second;
}

std::vector<RunningJob> SchedulerCore::RunningJobs() const {
  std::vector<RunningJob> jobs;
  jobs.reserve(runs_.size());
  for (const auto& [key, run] : runs_) {
    jobs.push_back(run.view);
    if (adjust_view_) adjust_view_(key, &jobs.back());
  }
  return jobs;
}

// An early start is parked while the memory it needs is still held by the jobs it was started beside, and
// resumed once they gave it back. Parked, it is frozen but not "frozen for lack of memory": the safety net
// leaves it alone and admission goes on around it (it is counted at its whole estimate).
std::vector<CoreAction> SchedulerCore::CheckEarlyStarts(const MemoryReading& reading, int64_t now_ms) {
  std::vector<CoreAction> actions;
  if (!policy_.config().early_starts) return actions;
  std::vector<RunningJob> jobs;
  size_t index = 0;  // RunningJobs() lists the runs in runs_' order: this run's view is jobs[at]
  for (auto& [key, run] : runs_) {
    const size_t at = index++;
    if (!run.view.early || run.killed) continue;
    if (jobs.empty()) jobs = RunningJobs();
    RunningJob* view = &jobs[at];
    const AdmissionPolicy::EarlyCheck check = policy_.CheckEarlyStart(reading, jobs, *view, now_ms);
    switch (check.step) {
      case AdmissionPolicy::EarlyStep::kNone:
        break;
      case AdmissionPolicy::EarlyStep::kPark:
        run.view.frozen = true;
        run.paused_once = true;
        // Jobs parked, not parks: one may climb and be parked again (RunningJob::Park).
        if (run.view.Park(now_ms)) ++decisions_.parks;
        view->Park(now_ms);  // the later checks of this tick see it parked
        actions.push_back({CoreAction::Kind::kPark, key, check.reason});
        break;
      case AdmissionPolicy::EarlyStep::kClimb:
        run.view.Climb(now_ms);
        view->Climb(now_ms);
        actions.push_back({CoreAction::Kind::kClimb, key, check.reason});
        break;
      case AdmissionPolicy::EarlyStep::kResume:
        run.view.Resume(now_ms);
        view->Resume(now_ms);
        actions.push_back({CoreAction::Kind::kResume, key, check.reason});
        break;
      case AdmissionPolicy::EarlyStep::kWon:
        run.view.early = view->early = false;
        break;
    }
  }
  return actions;
}

std::vector<CoreAction> SchedulerCore::SafetyActions(const MemoryReading& reading, int64_t now_ms) {
  std::vector<CoreAction> actions;
  for (const SafetyAction& action : safety_.Decide(reading, RunningJobs(), now_ms)) {
    if (Apply(action, now_ms)) actions.push_back(CoreAction::Of(action));
  }
  return actions;
}

bool SchedulerCore::Apply(const SafetyAction& action, int64_t now_ms) {
  Run* run = FindRun(action.job_id);
  if (!run) return false;
  // A job already killed (by the guard or the net) is on its way out: frozen, it would not die.
  if (run->killed && action.kind != SafetyAction::Kind::kThaw) return false;
  switch (action.kind) {
    case SafetyAction::Kind::kFreeze:
      if (run->view.frozen) return false;
      run->view.frozen = true;
      run->paused_once = true;
      ++decisions_.freezes;
      return true;
    case SafetyAction::Kind::kThaw:
      if (!run->view.frozen) return false;
      // For good: the net thaws a parked job only when it is the oldest (it must progress), so its bet is over; and
      // its plateau while frozen proved nothing.
      run->view.Resume(now_ms);
      return true;
    case SafetyAction::Kind::kKill:
      run->killed = true;
      ++decisions_.safety_kills;
      return true;
  }
  return false;
}

int SchedulerCore::SampleIntervalMs(int64_t now_ms) const {
  // A job growing into memory that is not free yet must be paused before the build reaches its cap: at 200 ms
  // a compile can take hundreds of MiB between two samples, at 20 ms a few tens (less than the reserve).
  constexpr int kEarlyStartSampleIntervalMs = 20;
  // Where rise bets are made (under the guard), a job's first second is sampled more finely, so the rise curve of a
  // short job has more than a sample or two; later samples matter less to a curve kept as shares of the run.
  constexpr int kYoungJobSampleIntervalMs = 50;
  constexpr int64_t kYoungJobMs = 1'000;
  int interval = kDefaultSampleIntervalMs;
  for (const auto& [key, run] : runs_) {
    if (run.view.early && !run.view.parked) return kEarlyStartSampleIntervalMs;
    if (policy_.config().rise_bets && now_ms - run.view.started_ms < kYoungJobMs) interval = kYoungJobSampleIntervalMs;
  }
  return interval;
}

SchedulerCore::Run SchedulerCore::End(CoreRunKey run_key) {
  auto it = runs_.find(run_key);
  Run run = std::move(it->second);
  runs_.erase(it);
  return run;
}

RequeueDecision SchedulerCore::MemoryFailure(CoreJobKey job, MemoryFailureKind kind, uint64_t peak,
                                             const RequeueConfig& config) {
  JobState& state = StateOf(job);
  Requeue& requeue = requeues_[job];
  if (kind == MemoryFailureKind::kKernelOomKill) {
    ++decisions_.oom_kills;
  } else if (kind == MemoryFailureKind::kFailedAtLimit) {
    ++decisions_.limit_failures;
    ++requeue.limit_failures;
  }
  ++requeue.memory_failures;
  state.settled = false;  // its kill is in the history now: the next look re-predicts
  RequeueDecision decision =
      DecideRequeue(requeue.memory_failures, peak, state.estimate.peak_bytes, budget_bytes_, kind, config);
  if (decision.kind == RequeueDecision::Kind::kGiveUp) return decision;
  ++decisions_.requeues;
  state.estimate.peak_bytes = std::max(state.estimate.peak_bytes, decision.new_estimate);
  requeue.floor = state.estimate.peak_bytes;  // sticky: re-predictions never go below it.
  state.must_run_alone = decision.kind == RequeueDecision::Kind::kRetryAlone;
  return decision;
}

}  // namespace headroom
