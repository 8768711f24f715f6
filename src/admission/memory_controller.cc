// The memory-aware JobController: estimates, admission, measurement, safety net and OOM requeues,
// wired into the builder's seam. Decisions are made by AdmissionPolicy/SafetyNet (pure logic);
// this file gathers their inputs and carries out what they decide.
#include "headroom/admission/memory_controller.h"

#include <signal.h>

#include <algorithm>
#include <climits>

#include "headroom/admission/priority.h"
#include "headroom/estimator/command_line.h"
#include "headroom/estimator/exec_mode.h"
#include "headroom/util/byte_size.h"
#include "headroom/graph/graph.h"
#include "headroom/logs/build_log.h"
#include "headroom/report/timeline.h"
#include "headroom/status/status.h"
#include "headroom/util/clock.h"

namespace headroom {

namespace {

AdmissionConfig MakeAdmissionConfig(const MemoryConfig& config) {
  AdmissionConfig admission;
  admission.budget_bytes = config.budget_bytes;
  admission.reserve_bytes = config.reserve_bytes;
  admission.cpus = config.cpus;
  return admission;
}

PeakMethod ToPeakMethod(PeakSource source) {
  switch (source) {
    case PeakSource::kCgroup:
      return PeakMethod::kCgroup;
    case PeakSource::kSampled:
      return PeakMethod::kProcessTree;
    case PeakSource::kRusage:
      return PeakMethod::kRusage;
    case PeakSource::kNone:
      break;
  }
  return PeakMethod::kUnknown;
}

}  // namespace

MemoryController::MemoryController(Parts parts, const MemoryConfig& config, bool explain)
    : parts_(parts),
      config_(config),
      explain_(explain),
      policy_(MakeAdmissionConfig(config)),
      safety_(policy_) {
  MemoryReading first = parts_.probe->Read(parts_.clock->NowMs());
  if (config_.budget_fraction > 0 && first.limit_bytes > 0) {
    // "--mem-budget=80%" is a share of what the machine or cgroup allows, fixed for this build.
    config_.budget_bytes = static_cast<uint64_t>(config_.budget_fraction * static_cast<double>(first.limit_bytes));
    policy_ = AdmissionPolicy(MakeAdmissionConfig(config_));
  }
  budget_bytes_ = policy_.Budget(first);
  decisions_.budget_bytes = budget_bytes_;
  decisions_.reserve_bytes = policy_.Reserve(budget_bytes_);
  first_reading_ = first;
  PrintWarnings();
}

void MemoryController::EnsureGuard() {
  // Armed before the first admission decision rather than at start: a build with nothing to do (a no-op, a
  // generator's check) then never forks the guard's watcher, which costs a copy of this process's page tables.
  if (guard_considered_) return;
  guard_considered_ = true;
  ArmGuard(first_reading_);
  OpenLedger();  // after the guard: the ledger names the cgroup the jobs live in
  if (guard_active()) {
    // Under the guard a lost bet costs a freeze or a requeue, never a kernel OOM kill: guesses may be bolder.
    AdmissionConfig guarded = policy_.config();
    guarded.guarded = true;
    guarded.early_starts = true;  // a lost bet is a pause (or at worst a requeue), never a kernel OOM kill
    guarded.rise_bets = true;     // likewise: a job that rises faster than before meets the safety net
    // v2: the kernel throttles the build above memory.high, where the guard then kills, so that (not the cap above
    // it) is what admission may plan on; a warm build filled to the budget was killed there every time.
    if (const uint64_t high = guard_->high_bytes(); high > 0 && high < budget_bytes_) {
      budget_bytes_ = high;
      guarded.budget_bytes = high;
      decisions_.budget_bytes = high;
    }
    policy_ = AdmissionPolicy(guarded);
    decisions_.reserve_bytes = policy_.Reserve(budget_bytes_);
  }
  PrintWarnings();
}

void MemoryController::PrintWarnings() {
  for (const std::string& warning : parts_.probe->TakeWarnings()) parts_.status->Warning(warning);
  for (const std::string& warning : parts_.meter->TakeWarnings()) parts_.status->Warning(warning);
}

void MemoryController::Explain(const std::string& message) const {
  if (!explain_) return;
  fflush(stdout);
  // What guards the build is said once, before the first memory decision: a build that memory never
  // shaped explains exactly what ninja's would.
  if (!decisions_.guard.empty() && parts_.meter->FirstGuardAnnouncement()) {
    fprintf(stderr, "ninja explain: %s\n", decisions_.guard.c_str());
    if (!decisions_.ledger.empty()) fprintf(stderr, "ninja explain: %s\n", decisions_.ledger.c_str());
  }
  fprintf(stderr, "ninja explain: %s\n", message.c_str());
}

MemoryController::EdgeState& MemoryController::StateFor(const Edge* edge) {
  auto [it, inserted] = edges_.try_emplace(edge);
  if (inserted) Describe(edge, &it->second);
  return it->second;
}

const std::string& MemoryController::OutputOf(const Edge* edge) {
  static const std::string kNone;
  return edge->outputs.empty() ? kNone : edge->outputs[0]->path;
}

JobDescription MemoryController::DescriptionOf(const Edge* edge, const EdgeState& state, std::string* hint) {
  JobDescription job;
  job.output = OutputOf(edge);
  job.command_hash = state.command_hash;
  job.rule = edge->rule->name();
  if (state.has_hint) {
    *hint = edge->GetBinding("headroom_mem");
    job.mem_hint = std::string_view(*hint);
  }
  return job;
}

void MemoryController::Describe(const Edge* edge, EdgeState* state) {
  // Everything the estimate depends on is evaluated and parsed once per edge into its profile; only the
  // history part of the estimate is redone later (RefreshIfStale).
  const std::string command = edge->EvaluateCommand();
  const std::string rspfile_content = edge->GetBinding("rspfile_content");
  state->command_hash = parts_.build_log ? parts_.build_log->HashCommand(edge->EvaluateCommand(true)) : 0;
  state->has_hint = !edge->GetBinding("headroom_mem").empty();
  std::string hint;
  JobDescription job = DescriptionOf(edge, *state, &hint);
  job.command = command;
  job.rspfile_content = rspfile_content;
  const JobProfile profile = parts_.estimator->Profile(job);
  state->class_key = profile.class_key;
  state->family_key = profile.family_key;
  state->prior_peak_bytes = profile.prior.peak_bytes;
  state->prior_family = profile.prior.family;  // its text is left out: only an estimate's `why` reads it
  state->store_key = profile.store_key;
  Predict(edge, *state);
}

JobProfile MemoryController::ProfileOf(const EdgeState& state) {
  JobProfile profile;
  profile.class_key = state.class_key;
  profile.family_key = state.family_key;
  profile.prior.peak_bytes = state.prior_peak_bytes;
  profile.prior.family = state.prior_family;
  profile.store_key = state.store_key;
  return profile;
}

JobProfile MemoryController::ModeProfileOf(const Edge* edge, const EdgeState& state, bool at_job_end) const {
  JobProfile profile = ProfileOf(state);
  const auto& remote = at_job_end ? exec_mode_hooks_.ran_remote : exec_mode_hooks_.starts_remote;
  if (!remote || !remote(edge)) return profile;
  // A remote-bound edge is predicted on every walk while it waits: its class's " @remote" keys are made once.
  auto [keys, added] = remote_keys_.try_emplace(profile.class_key);
  if (added) {
    keys->second = {parts_.estimator->InternKey(ExecModeKey(profile.class_key, ExecMode::kRemote)),
                    parts_.estimator->InternKey(ExecModeKey(profile.family_key, ExecMode::kRemote))};
  }
  profile.class_key = keys->second.first;
  profile.family_key = keys->second.second;
  if (exec_mode_hooks_.residual_bytes) profile.prior.peak_bytes = exec_mode_hooks_.residual_bytes(edge);
  return profile;
}

void MemoryController::Predict(const Edge* edge, EdgeState& state) {
  std::string hint;
  const Estimate estimate = parts_.estimator->Predict(DescriptionOf(edge, state, &hint),
                                                      ModeProfileOf(edge, state, false), EstimateDetail::kFiguresOnly);
  state.estimate.peak_bytes = std::max(estimate.peak_bytes, RequeueFloor(edge));
  state.estimate.duration_ms = estimate.duration_ms;
  state.estimate.source = estimate.source;
  state.estimate.unknown_heavy = estimate.unknown_heavy;
  state.estimate.confident = estimate.confident;
  state.estimate.rise = estimate.rise;
  state.estimate_generation = static_cast<uint32_t>(parts_.estimator->generation());
  // Only a duration taken from the class (the edge's runs gave none) or a requeue can still move it.
  state.settled = estimate.source == EstimateSource::kEdgeHistory && estimate.duration_ms > 0 &&
                  !requeues_.count(edge);
}

void MemoryController::RefreshIfStale(const Edge* edge, EdgeState& state) {
  // Every finished job bumps the generation; the walk over waiting edges then re-predicts each once.
  if (!state.settled && state.estimate_generation != static_cast<uint32_t>(parts_.estimator->generation()))
    Predict(edge, state);
}

EdgeWeight MemoryController::EdgeCost(const Edge* edge) {
  if (edge->is_phony()) return {0, false};
  // Durations and peaks come from history alone: without any, every job counts 1 (ninja's order) and
  // nothing needs evaluating. With history, long and memory-heavy jobs pull their chains forward, and jobs
  // too big to run beside one another are chained (BuilderEdgeWeight).
  if (!parts_.estimator->HasHistory()) return {1, false};
  // The plan asks for every edge of the build; only edges about to start keep their state (a large build
  // would otherwise hold a parsed command and an estimate per edge for its whole duration).
  int64_t duration_ms;
  uint64_t peak_bytes;
  if (auto it = edges_.find(edge); it != edges_.end()) {
    duration_ms = it->second.estimate.duration_ms;
    peak_bytes = it->second.estimate.peak_bytes;
  } else {
    EdgeState transient;
    Describe(edge, &transient);
    duration_ms = transient.estimate.duration_ms;
    peak_bytes = transient.estimate.peak_bytes;
  }
  uint64_t reserve = policy_.Reserve(budget_bytes_);
  uint64_t usable = budget_bytes_ > reserve ? budget_bytes_ - reserve : 0;
  return BuilderEdgeWeight(duration_ms, peak_bytes, usable, true);
}

MemoryReading MemoryController::Read() {
  return parts_.probe->Read(parts_.clock->NowMs());
}

std::vector<RunningJob> MemoryController::RunningJobs() const {
  std::vector<RunningJob> jobs;
  jobs.reserve(running_.size());
  for (const auto& [id, running] : running_) {
    jobs.push_back(running.job);
    jobs.back().predicted_peak += slot_costs_.Charge(id);  // its jobserver slots (docs/jobserver.md)
    SizeNestedBuild(running, &jobs.back());
  }
  return jobs;
}

// Only a prior is a guess: measured figures, hints and an OOM requeue's raised floor are evidence.
uint64_t MemoryController::RequeueFloor(const Edge* edge) const {
  if (requeues_.empty()) return 0;  // most builds: no lookup
  auto it = requeues_.find(edge);
  return it == requeues_.end() ? 0 : it->second.floor;
}

bool MemoryController::SizedFromOwnRuns(const Edge* edge, const EdgeState& state) const {
  // An OOM requeue's raised floor is not what its runs reached (RunningJob::own_history).
  return state.estimate.source == EstimateSource::kEdgeHistory && RequeueFloor(edge) == 0;
}

bool MemoryController::KeepsALocalCpuBusy(const Edge* edge, const EdgeState& state) const {
  // A compile sent to a farm (distcc, icecc, sccache-dist) runs on another machine's CPU.
  const auto& remote = exec_mode_hooks_.starts_remote;
  return IsComputeBound(state.prior_family) && !(remote && remote(edge));
}

bool MemoryController::IsGuess(const Edge* edge, const EdgeState& state) const {
  return state.estimate.source == EstimateSource::kPrior && RequeueFloor(edge) == 0;
}

Candidate MemoryController::CandidateFor(const Edge* edge, EdgeState& state, int64_t now) const {
  Candidate candidate;
  candidate.id = edge->id;
  candidate.class_key = state.class_key;
  candidate.family_key = state.family_key;
  candidate.predicted_peak = state.estimate.peak_bytes;
  candidate.unknown_heavy = state.estimate.unknown_heavy;
  candidate.from_prior = IsGuess(edge, state);
  candidate.measured = state.estimate.confident;
  candidate.must_run_alone = state.must_run_alone;
  candidate.ready_since_ms = state.waiting_since_ms >= 0 ? state.waiting_since_ms : now;
  candidate.expected_ms = state.estimate.duration_ms;
  candidate.rise = state.estimate.rise;
  candidate.own_history = SizedFromOwnRuns(edge, state);
  candidate.kin = KinScopeOf(state.estimate.source);
  candidate.compute_bound = KeepsALocalCpuBusy(edge, state);
  candidate.priority = static_cast<double>(edge->critical_path_weight);
  return candidate;
}

void MemoryController::BeginPass() {
  // A pass admits at most one job. Its reading may be a few milliseconds old: the policy itself reserves
  // what every running job (one started since the reading included) is still expected to grow, and
  // reading memory before each of hundreds of quick jobs a second would cost more than they do. A job
  // that ends holding real memory makes the next pass read afresh.
  EnsureGuard();  // a pass means there is work: the guard and the ledger come before its first decision
  const int64_t now = parts_.clock->NowMs();
  pass_.emplace(policy_, AdmissionReading(now), RunningJobs(), now);
  pass_waits_ = 0;
}

MemoryReading MemoryController::AdmissionReading(int64_t now) {
  MemoryReading reading = RecentReading(now);
  ShareWithOtherBuilds(&reading, now);
  return reading;
}

const MemoryReading& MemoryController::RecentReading(int64_t now) {
  if (pass_reading_ms_ < 0 || now - pass_reading_ms_ >= kReadingReuseMs) {
    pass_reading_ = Read();
    pass_reading_ms_ = now;
  }
  return pass_reading_;
}

bool MemoryController::MayStart(Edge* edge, size_t running) {
  EnsureGuard();
  // Once nothing more can start (alone, frozen, pressure, a starved head) or kAdmissionWalkWindow candidates were
  // refused, the rest of the ready queue is not looked at: describing each edge there would keep a state for
  // it until it runs (a cold build of 10k ready jobs held 10k of them) and cost a walk over all of them per
  // start. The queue is in priority order, so what is left out is what would have come last anyway.
  if (pass_ && (pass_->stopped() || pass_waits_ >= kAdmissionWalkWindow)) return false;
  const int64_t now = parts_.clock->NowMs();
  EdgeState& state = StateFor(edge);
  RefreshIfStale(edge, state);
  if (!pass_) BeginPass();
  // The pass keeps memory for a head that waits for it from jobs that would delay it (AdmissionPass).
  const AdmissionDecision decision = pass_->Consider(CandidateFor(edge, state, now));
  if (decision.admit) {
    if (pass_waits_ == 0) PublishHeadWait(0);
    NoteAdmitted(edge, state, decision, now);
    return true;
  }
  if (decision.wait == WaitKind::kCpu) {
    NoteCpuWait(edge, state, decision);
  } else {
    if (pass_waits_ == 0) PublishHeadWait(NeedOtherBuildsShouldLeave(state));
    NoteWait(edge, state, decision, now);
  }
  ++pass_waits_;
  return false;
}

void MemoryController::NoteCpuWait(const Edge* edge, EdgeState& state, const AdmissionDecision& decision) {
  if (state.explained_cpu_wait) return;
  state.explained_cpu_wait = true;
  ++decisions_.cpu_waits;
  Explain("waiting for a CPU: " + OutputOf(edge) + ": " + decision.reason);
}

void MemoryController::NoteWait(const Edge* edge, EdgeState& state, const AdmissionDecision& decision, int64_t now) {
  if (state.waiting_since_ms < 0) {
    state.waiting_since_ms = now;
    ++decisions_.jobs_waited;
    ++waiting_now_;
    RecordMarker("wait", OutputOf(edge), decision.reason, now);
  }
  if (!state.explained_wait) {
    state.explained_wait = true;
    Explain("waiting for memory: " + OutputOf(edge) + ": " + decision.reason + OtherBuildsNote());
  }
}

void MemoryController::NoteAdmitted(const Edge* edge, EdgeState& state, const AdmissionDecision& decision,
                                    int64_t now) {
  state.last_wait_ms = 0;
  if (state.waiting_since_ms >= 0) {
    state.last_wait_ms = static_cast<int32_t>(std::min<int64_t>(now - state.waiting_since_ms, INT32_MAX));
    decisions_.wait_ms_total += now - state.waiting_since_ms;
    state.waiting_since_ms = -1;
    --waiting_now_;
  }
  state.explained_wait = false;
  state.early_start = decision.early_start;
  state.counted_peak = decision.counted_peak;
  if (decision.early_start) Explain("started early: " + OutputOf(edge) + ": " + decision.reason);
  if (decision.over_budget) {
    ++decisions_.over_budget_starts;
    RecordMarker("over-budget", OutputOf(edge),
                 "expected ~" + FormatBytes(state.estimate.peak_bytes) + ", over the " + FormatBytes(budget_bytes_) +
                     " budget: started alone",
                 now);
    parts_.status->Warning("'" + OutputOf(edge) + "' (expected to need ~" + FormatBytes(state.estimate.peak_bytes) +
                           ") does not fit in the memory left under the " + FormatBytes(budget_bytes_) +
                           " budget; running it alone so the build can progress");
  }
}

JobStartOptions MemoryController::PrepareJob(Edge* edge) {
  EnsureGuard();  // normally armed by MayStart already; a job never starts outside the guard
  pending_meter_key_ = next_meter_key_++;
  JobStartOptions options;
  options.cgroup_dir = parts_.meter->PrepareJob(pending_meter_key_);
  options.prepared = parts_.meter->PreparedLaunchFor(pending_meter_key_);
  AddOuterJobVariable(&options);
  return options;
}

void MemoryController::JobStarted(Edge* edge, JobId id, ProcessRunner* runner) {
  const int64_t now = parts_.clock->NowMs();
  runner_ = runner;
  EdgeState& state = StateFor(edge);
  Running running;
  running.edge = edge;
  running.runner_id = id;
  running.meter_key = pending_meter_key_;
  running.job.id = static_cast<uint64_t>(pending_meter_key_);
  running.job.class_key = state.class_key;
  running.job.family_key = state.family_key;
  // A guess is counted as admission counted it (capped to what the budget allows); evidence raises it.
  // What admission counted for it (a guess capped, its kin's live memory); a start without a decision (none so far
  // has one) counts the same, recomputed.
  running.job.predicted_peak = state.counted_peak != 0
                                   ? state.counted_peak
                                   : policy_.CountedPeak(CandidateFor(edge, state, now), RunningJobs(), budget_bytes_);
  state.counted_peak = 0;
  running.job.started_ms = now;
  running.job.last_growth_ms = now;
  if (state.estimate.duration_ms > 0) running.job.expected_end_ms = now + state.estimate.duration_ms;
  running.job.runs_alone = state.must_run_alone;
  running.job.rise = state.estimate.rise;
  running.job.own_history = SizedFromOwnRuns(edge, state);
  running.job.compute_bound = KeepsALocalCpuBusy(edge, state);
  running.job.priority = static_cast<double>(edge->critical_path_weight);
  running.job.early = state.early_start;
  if (state.early_start) ++decisions_.early_starts;
  state.early_start = false;
  running.job.heavy = state.estimate.peak_bytes >= policy_.config().heavy_threshold;
  // The last tick's figure, not a fresh read: a hit between that tick and now can only make a failure look
  // like the cap's doing (one retry), never hide one.
  if (guard_active()) running.guard_limit_hits_at_start = guard_->limit_hits();
  parts_.meter->JobStarted(pending_meter_key_, runner->ProcessGroupOf(id));
  RecordJobStart(&running, edge, state, now);
  running_.emplace(id, std::move(running));
  PublishToLedger();
}

int MemoryController::TickIntervalMs() const { return running_.empty() ? -1 : SampleIntervalMs(); }

int MemoryController::SampleIntervalMs() const {
  // A job growing into memory that is not free yet must be paused before the build reaches its cap: at 200 ms
  // a compile can take hundreds of MiB between two samples, at 20 ms a few tens (less than the reserve).
  constexpr int kEarlyStartSampleIntervalMs = 20;
  // Where rise bets are made (under the guard), a job's first second is sampled more finely, so the rise curve of a
  // short job has more than a sample or two; later samples matter less to a curve kept as shares of the run.
  constexpr int kYoungJobSampleIntervalMs = 50;
  constexpr int64_t kYoungJobMs = 1'000;
  int interval = kDefaultSampleIntervalMs;
  const int64_t now = parts_.clock->NowMs();
  for (const auto& [id, running] : running_) {
    if (running.job.early && !running.job.parked) return kEarlyStartSampleIntervalMs;
    if (policy_.config().rise_bets && now - running.job.started_ms < kYoungJobMs) {
      interval = kYoungJobSampleIntervalMs;
    }
  }
  return interval;
}

MemoryController::Running* MemoryController::FindByKey(uint64_t key) {
  for (auto& [id, running] : running_) {
    if (static_cast<uint64_t>(running.meter_key) == key) return &running;
  }
  return nullptr;
}

void MemoryController::Tick(ProcessRunner* runner) {
  if (running_.empty()) return;
  const int64_t now = parts_.clock->NowMs();
  // The builder ticks after every wait, and with quick jobs a wait ends many times per interval:
  // sampling at the interval keeps the cost per job flat while still watching the slow ones.
  if (last_tick_ms_ >= 0 && now - last_tick_ms_ < SampleIntervalMs()) return;
  last_tick_ms_ = now;
  parts_.meter->Sample();
  for (auto& [id, running] : running_) {
    const uint64_t bytes = parts_.meter->CurrentBytes(running.meter_key);
    MemoryTrack::Observe(&running.job, bytes, now);
    running.rise.Sample(now - running.job.started_ms, bytes);
  }
  const MemoryReading reading = Read();
  PublishToLedger();
  pass_reading_ = reading;
  pass_reading_ms_ = now;
  CheckEarlyStarts(AdmissionReading(now), now, runner);
  CheckGuard(now, runner);
  for (const SafetyAction& action : safety_.Decide(reading, RunningJobs(), now)) ApplySafetyAction(action, runner);
  RecordSample(reading, now);
  PublishStatus(reading);
  PrintWarnings();
}

void MemoryController::ApplySafetyAction(const SafetyAction& action, ProcessRunner* runner) {
  Running* running = FindByKey(action.job_id);
  if (!running) return;
  // A job already killed (by the guard or the net) is on its way out: frozen, it would not die.
  if (running->safety_killed && action.kind != SafetyAction::Kind::kThaw) return;
  switch (action.kind) {
    case SafetyAction::Kind::kFreeze:
      if (running->job.frozen) return;
      Pause(running, runner);
      ++decisions_.freezes;
      RecordMarker("freeze", running->edge->outputs[0]->path, action.reason, parts_.clock->NowMs());
      Explain("froze '" + running->edge->outputs[0]->path + "': " + action.reason);
      break;
    case SafetyAction::Kind::kThaw:
      if (!running->job.frozen) return;
      Resume(*running, runner);
      // For good: the net thaws a parked job only when it is the oldest (it must progress), so its bet is over; and
      // its plateau while frozen proved nothing.
      running->job.Resume(parts_.clock->NowMs());
      RecordMarker("thaw", running->edge->outputs[0]->path, action.reason, parts_.clock->NowMs());
      Explain("thawed '" + running->edge->outputs[0]->path + "': " + action.reason);
      break;
    case SafetyAction::Kind::kKill:
      running->safety_killed = true;
      ++decisions_.safety_kills;
      RecordMarker("kill", running->edge->outputs[0]->path, action.reason, parts_.clock->NowMs());
      // A stopped process group must be continued for SIGKILL to take effect promptly everywhere.
      runner->SignalJob(running->runner_id, SIGKILL);
      if (running->job.frozen) Resume(*running, runner);
      Explain("killed '" + running->edge->outputs[0]->path + "' to save the build: " + action.reason);
      break;
  }
}

void MemoryController::Pause(Running* running, ProcessRunner* runner) {
  // The cgroup freezer stops the whole tree at once; without it the process group is stopped.
  running->frozen_by_signal = !parts_.meter->Freeze(running->meter_key);
  running->paused_once = true;
  if (running->frozen_by_signal) runner->SignalJob(running->runner_id, SIGSTOP);
  running->job.frozen = true;
}

// An early start is parked while the memory it needs is still held by the jobs it was started beside, and
// resumed once they gave it back. Parked, it is frozen but not "frozen for lack of memory": the safety net
// leaves it alone and admission goes on around it (it is counted at its whole estimate).
void MemoryController::CheckEarlyStarts(const MemoryReading& reading, int64_t now, ProcessRunner* runner) {
  if (!policy_.config().early_starts) return;
  std::vector<RunningJob> jobs;
  for (auto& [id, running] : running_) {
    if (!running.job.early || running.safety_killed) continue;
    if (jobs.empty()) jobs = RunningJobs();
    const uint64_t job_id = running.job.id;  // a lambda may not capture a structured binding (C++20, clang)
    auto view = std::find_if(jobs.begin(), jobs.end(), [job_id](const RunningJob& j) { return j.id == job_id; });
    const AdmissionPolicy::EarlyCheck check = policy_.CheckEarlyStart(reading, jobs, *view, now);
    const std::string& output = running.edge->outputs[0]->path;
    switch (check.step) {
      case AdmissionPolicy::EarlyStep::kNone:
        break;
      case AdmissionPolicy::EarlyStep::kPark:
        Pause(&running, runner);
        // Jobs parked, not parks: one may climb and be parked again (RunningJob::Park).
        if (running.job.Park(now)) ++decisions_.parks;
        view->Park(now);  // the later checks of this tick see it parked
        Explain("paused '" + output + "': " + check.reason);
        break;
      case AdmissionPolicy::EarlyStep::kClimb:
        Resume(running, runner);
        running.job.Climb(now);
        view->Climb(now);
        Explain("let '" + output + "' climb: " + check.reason);
        break;
      case AdmissionPolicy::EarlyStep::kResume:
        Resume(running, runner);
        running.job.Resume(now);
        view->Resume(now);
        Explain("resumed '" + output + "': " + check.reason);
        break;
      case AdmissionPolicy::EarlyStep::kWon:
        running.job.early = view->early = false;
        break;
    }
  }
}

// Undoes a freeze both ways: the freezer cgroup is thawed even for a job stopped by signal (a freeze that fell
// back to SIGSTOP may have frozen part of the tree first), and a signal-stopped group gets SIGCONT.
void MemoryController::Resume(const Running& running, ProcessRunner* runner) {
  parts_.meter->Thaw(running.meter_key);
  if (running.frozen_by_signal && runner) runner->SignalJob(running.runner_id, SIGCONT);
}

bool MemoryController::JobFinished(Edge* edge, JobExit* exit) {
  auto it = running_.find(exit->id);
  if (it == running_.end()) return false;
  Running running = std::move(it->second);
  running_.erase(it);
  EdgeState& state = StateFor(edge);

  JobExit metered = *exit;
  metered.id = running.meter_key;
  const JobMemoryResult result = parts_.meter->Finish(metered);
  if (result.peak_bytes >= kFreshReadingAfterBytes) pass_reading_ms_ = -1;

  const bool failed_at_limit =
      !running.safety_killed && !result.oom.oom_killed && FailedAtGuardLimit(edge, running, *exit);
  HistoryRecord record;
  record.peak_bytes = std::max(result.peak_bytes, running.job.peak_rss);
  record.duration_ms = exit->wall_ms;
  record.method = ToPeakMethod(result.peak_source);
  // A failure at the guard's limit is recorded as headroom's kill: its peak is where the cap stopped it, a
  // lower bound like a killed job's.
  record.outcome = running.safety_killed || failed_at_limit ? JobOutcome::kSafetyKilled
                   : result.oom.oom_killed                  ? JobOutcome::kOomKilled
                                                            : JobOutcome::kCompleted;
  // A pause stretched its run without growth: its samples would say it rose later than it does, so such a run
  // keeps what the edge's earlier runs said (unknown when they said nothing) rather than making the next
  // estimate's curve unknown (RiseCurve::Faster).
  if (record.outcome == JobOutcome::kCompleted) {
    record.rise = running.paused_once ? state.estimate.rise : running.rise.Finish(record.peak_bytes, record.duration_ms);
  }
  RecordJobEnd(running, parts_.clock->NowMs(), record.peak_bytes, PeakSourceName(result.peak_source),
               running.safety_killed     ? "safety-killed"
               : result.oom.oom_killed   ? "oom-killed"
               : exit->success()         ? "ok"
                                         : "failed",
               exit->ExitStatusCode());
  if (timeline_ && exec_mode_hooks_.run_mode) timeline_->SetExecMode(running.timeline_job, exec_mode_hooks_.run_mode(edge));
  slot_costs_.JobEnded(exit->id, record.peak_bytes);  // a job that held slots teaches what one costs
  if (running.safety_killed) EndKillTurnOnceVictimsEnded();
  nested_owed_.erase(running.meter_key);
  PublishToLedger();
  std::string learn_error, hint;
  const JobDescription job = DescriptionOf(edge, state, &hint);
  const JobProfile profile = ModeProfileOf(edge, state, true);
  if (!parts_.estimator->Learn(job, record, &learn_error, &profile) && !learn_error.empty())
    parts_.status->Warning("recording memory history: " + learn_error);

  if (record.outcome == JobOutcome::kCompleted) {
    edges_.erase(edge);  // done with: what it taught lives in the history now.
    requeues_.erase(edge);
    return false;
  }
  const MemoryFailureKind kind = running.safety_killed ? MemoryFailureKind::kHeadroomKill
                                 : failed_at_limit       ? MemoryFailureKind::kFailedAtLimit
                                                         : MemoryFailureKind::kKernelOomKill;
  return HandleMemoryFailure(edge, state, result, kind, exit);
}

bool MemoryController::HandleMemoryFailure(Edge* edge, EdgeState& state, const JobMemoryResult& result,
                                           MemoryFailureKind kind, JobExit* exit) {
  const int64_t now = parts_.clock->NowMs();
  Requeue& requeue = requeues_[edge];
  if (kind == MemoryFailureKind::kKernelOomKill) {
    ++decisions_.oom_kills;
    RecordMarker("oom", OutputOf(edge), "the kernel's OOM killer ended it (" + result.oom.explanation + ")", now);
  } else if (kind == MemoryFailureKind::kFailedAtLimit) {
    ++decisions_.limit_failures;
    ++requeue.limit_failures;  // its "requeue" (or "gave-up") marker below says why
  }
  ++requeue.memory_failures;
  state.settled = false;  // its kill is in the history now: the next look re-predicts
  const uint64_t peak = result.peak_bytes;
  RequeueDecision decision =
      DecideRequeue(requeue.memory_failures, peak, state.estimate.peak_bytes, budget_bytes_, kind, RequeueFor(kind, peak));
  if (decision.kind == RequeueDecision::Kind::kGiveUp) {
    std::string reason = kind == MemoryFailureKind::kHeadroomKill ? "headroom stopped it to keep the machine alive"
                         : kind == MemoryFailureKind::kFailedAtLimit
                             ? "it failed while the build was at its memory limit"
                             : "the kernel's OOM killer ended it (" + result.oom.explanation + ")";
    if (!exit->output.empty() && exit->output.back() != '\n') exit->output.push_back('\n');
    exit->output += "headroom: " + reason + "; " + decision.message + "\n";
    RecordMarker("gave-up", OutputOf(edge), decision.message, now);
    return false;
  }
  ++decisions_.requeues;
  RecordMarker("requeue", OutputOf(edge), decision.message, now);
  state.estimate.peak_bytes = std::max(state.estimate.peak_bytes, decision.new_estimate);
  requeue.floor = state.estimate.peak_bytes;  // sticky: re-predictions never go below it.
  state.must_run_alone = decision.kind == RequeueDecision::Kind::kRetryAlone;
  if (kind == MemoryFailureKind::kFailedAtLimit) {
    // Its output is not shown (the retry's will be): the warning names the job, -d explain says why.
    parts_.status->Warning("'" + OutputOf(edge) + "' " + decision.message);
    ExplainLimitRetry(edge, *exit, decision.message);
  } else {
    parts_.status->Warning(decision.message);
  }
  return true;
}

void MemoryController::PublishStatus(const MemoryReading& reading) {
  MemoryStatus status;
  status.used_bytes = reading.used_bytes;
  status.budget_bytes = budget_bytes_;
  status.jobs_waiting_for_memory = waiting_now_;
  if (exec_mode_hooks_.status_fields) exec_mode_hooks_.status_fields(&status);
  parts_.status->UpdateMemory(status);
}

void MemoryController::BuildEnded() {
  // Whatever still runs here is being aborted; its measurements do not teach anything, but the
  // timeline keeps it, as the job the build stopped in the middle of.
  const int64_t now = parts_.clock->NowMs();
  if (!running_.empty()) ReleaseGuardForAbort();
  for (const auto& [id, running] : running_) {
    const uint64_t peak = std::max(parts_.meter->PeakSoFar(running.meter_key), running.job.peak_rss);
    RecordJobEnd(running, now, peak, "sampled", "interrupted", -1);
    parts_.meter->Abandon(running.meter_key);
  }
  running_.clear();
}

// --- build guard -------------------------------------------------------------------------------------

bool MemoryController::guard_active() const { return guard_ != nullptr && guard_->armed(); }

// The build's cgroup is capped at the budget, or at what was available when the build began if that is
// less (a cap above what is free would let the enclosing cgroup's, or the machine's, OOM killer act first),
// less a margin for what shares that enclosing limit from outside the group: headroom itself and its logs.
void MemoryController::ArmGuard(const MemoryReading& first) {
  constexpr uint64_t kMinGuardBytes = 64ull << 20;
  constexpr uint64_t kMinMarginBytes = 16ull << 20, kMaxMarginBytes = 64ull << 20;
  uint64_t limit = budget_bytes_;
  if (first.available_bytes > 0) limit = std::min(limit, first.available_bytes);
  limit -= std::min(limit / 2, std::clamp<uint64_t>(limit / 32, kMinMarginBytes, kMaxMarginBytes));
  limit = std::max(limit, kMinGuardBytes);
  std::string why_not;
  guard_ = parts_.meter->ArmGuard(limit, &why_not);
  decisions_.guard = guard_ ? guard_->Describe()
                            : "no build guard: " + why_not +
                                  "; the kernel's OOM killer stays in charge when a job outgrows its estimate";
}

// Tasks that wait at the guard's limit (or are throttled at memory.high) get memory only when a job ends:
// the youngest one that holds real memory is killed and requeued, one kill at a time.
void MemoryController::CheckGuard(int64_t now, ProcessRunner* runner) {
  if (!guard_active()) return;
  bool kill_in_flight = false;
  for (const auto& [id, running] : running_) kill_in_flight |= running.safety_killed;
  // Builds sharing the guard group take turns to kill: this build's turn ends when its victim has ended.
  if (!kill_in_flight) guard_->EndKillTurn();
  const GuardCheck check = guard_->Check(now);
  if (!check.stalled) {
    guard_stalled_ = false;
    return;
  }
  if (!guard_stalled_) {
    ++decisions_.guard_stalls;
    guard_stalled_since_ms_ = now;
  }
  guard_stalled_ = true;
  const int64_t stalled_for = now - guard_stalled_since_ms_;
  // Every build in the group sees this stall; while another one's victim is still dying, this one waits, but not
  // for ever: a turn held past kMaxTurnWaitMs (a victim that does not die) no longer stops this build acting.
  if (!kill_in_flight && !guard_->TakeKillTurn() && stalled_for < kMaxTurnWaitMs) return;
  std::vector<RunningJob> jobs = RunningJobs();
  // A job running a nested headroom build: that build's guard sees the stall too (v1 marks every group below the
  // one at its limit) and kills one of its own jobs, which costs far less than the whole nested build.
  if (!nested_owed_.empty() && stalled_for < kNestedBuildDeferMs) {
    std::erase_if(jobs, [this](const RunningJob& job) { return nested_owed_.count(static_cast<int>(job.id)) > 0; });
  }
  const uint64_t meaningful = guard_->limit_bytes() / 32;
  // In a shared group the youngest job holding real memory pays, whichever build runs it.
  const bool defer = !kill_in_flight && guard_->AnotherBuildShouldPay(meaningful, now);
  const std::optional<uint64_t> victim = defer ? std::nullopt : ChooseGuardVictim(jobs, kill_in_flight, meaningful);
  if (!victim) {
    if (!kill_in_flight) guard_->EndKillTurn();  // nothing of this build's to free, or not its turn to pay
    return;
  }
  ++decisions_.guard_kills;
  ApplySafetyAction(SafetyAction{SafetyAction::Kind::kKill, *victim, check.detail + "; killing the youngest job"},
                    runner);
}

// Beside other builds a headroom kill is no proof that a job cannot succeed: it is killed to make room for jobs of
// builds that do not run "alone" with it. A job that held far less than the budget then gets more attempts (its
// build publishes its need and the others leave it room, LedgerEntry::waiting_bytes); one that nearly fills the
// budget, or a kernel kill, gives up as alone.
RequeueConfig MemoryController::RequeueFor(MemoryFailureKind kind, uint64_t peak) const {
  RequeueConfig config;
  constexpr int kAttemptsBesideOtherBuilds = 8;
  if (kind == MemoryFailureKind::kHeadroomKill && decisions_.other_builds_most > 0 && peak < budget_bytes_ / 2) {
    config.max_attempts = kAttemptsBesideOtherBuilds;
  }
  return config;
}

// A build's turn to kill in a shared guard group ends with its last victim, here and not only at its next tick: a
// build whose victim was its last running job ticks no more, and kept the turn (and every other build from ending
// the group's stall) for good; seen with four concurrent builds in one box.
void MemoryController::EndKillTurnOnceVictimsEnded() {
  if (!guard_active()) return;
  for (const auto& [id, other] : running_) {
    if (other.safety_killed) return;
  }
  guard_->EndKillTurn();
}

// Interrupt-like ends (as the builder reads them) stop the build; they are never retried.
static bool EndedLikeAnInterrupt(const JobExit& exit) {
  if (exit.exited_normally) return exit.exit_code == 130;
  return exit.term_signal == SIGINT || exit.term_signal == SIGTERM || exit.term_signal == SIGHUP;
}

// Under the v1 guard a page fault at the limit waits, but a charge inside a system call fails: a job writing
// a tmpfs file (a compiler's temp file in a tmpfs /tmp, /dev/shm) gets ENOMEM and exits non-zero. The limit
// counter rising during its run is the sign; it also rises when the kernel only reclaimed cache, so a real
// error that happens then costs one retry, and a second failure is shown as ninja shows it.
bool MemoryController::FailedAtGuardLimit(const Edge* edge, const Running& running, const JobExit& exit) {
  if (exit.success() || EndedLikeAnInterrupt(exit) || !guard_active()) return false;
  if (auto it = requeues_.find(edge); it != requeues_.end() && it->second.limit_failures > 0) return false;
  return guard_->ReadLimitHits() > running.guard_limit_hits_at_start;
}

// The failed attempt's output is dropped, so -d explain keeps its first line: where tools put the error
// (dd, a compiler), enough to see an ENOMEM.
void MemoryController::ExplainLimitRetry(const Edge* edge, const JobExit& exit, const std::string& decision) {
  if (!explain_) return;
  constexpr size_t kMaxQuoted = 200;
  std::string_view output = exit.output;
  output.remove_prefix(std::min(output.size(), output.find_first_not_of("\r\n")));
  std::string_view first_line = output.substr(0, std::min(output.find_first_of("\r\n"), kMaxQuoted));
  std::string message = "retrying '" + OutputOf(edge) + "': it exited with " +
                        std::to_string(exit.ExitStatusCode()) + " after the build hit its " +
                        FormatBytes(guard_->limit_bytes()) +
                        " limit, where a write to memory-backed files fails instead of waiting (" + decision + ")";
  if (!first_line.empty()) message += "; its output began: " + std::string(first_line);
  Explain(message);
}

// The build is stopping with jobs still running: lift the cap and thaw them first, so that none waits at
// the limit or sits frozen while the runner signals and waits for it.
void MemoryController::ReleaseGuardForAbort() {
  if (guard_) guard_->Release();
  for (auto& [id, running] : running_) {
    if (!running.job.frozen) continue;
    Resume(running, runner_);
    running.job.frozen = false;
  }
}

void MemoryController::RecordJobStart(Running* running, const Edge* edge, const EdgeState& state, int64_t now) {
  if (!timeline_) return;
  TimelineJob job;
  job.output = OutputOf(edge);
  if (timeline_->keeps_details()) {  // the summary alone reads none of these
    job.command = edge->EvaluateCommand();  // evaluated again rather than kept per waiting edge
    job.rule = edge->rule->name();
    job.class_key = state.class_key;
  }
  job.start_ms = timeline_->Elapsed(now);
  job.estimate_bytes = state.estimate.peak_bytes;
  job.estimate_source = EstimateSourceName(state.estimate.source);
  job.waited_ms = state.last_wait_ms;
  running->timeline_job = timeline_->JobStarted(std::move(job));
}

void MemoryController::RecordJobEnd(const Running& running, int64_t now, uint64_t peak_bytes, const char* method,
                                    const std::string& outcome, int exit_code) {
  if (!timeline_) return;
  timeline_->JobFinished(running.timeline_job, timeline_->Elapsed(now), peak_bytes, method, outcome, exit_code);
}

void MemoryController::RecordSample(const MemoryReading& reading, int64_t now) {
  if (!timeline_) return;
  MemorySample sample;
  sample.t_ms = timeline_->Elapsed(now);
  sample.machine_used_bytes = reading.used_bytes;
  sample.budget_bytes = budget_bytes_;
  // The budget is held against what the build's jobs use (see AdmissionPolicy::Headroom), so that
  // is the "used" the report draws under the budget line.
  for (const auto& [id, running] : running_) {
    sample.used_bytes += running.job.rss;
    sample.reserved_bytes += policy_.Owed(running.job, now);
    sample.jobs.push_back(JobUsage{running.timeline_job, running.job.rss});
  }
  sample.pressure_pct = reading.pressure_some_pct;
  sample.running = static_cast<int>(running_.size());
  sample.waiting = waiting_now_;
  timeline_->Sample(sample);
}

void MemoryController::RecordMarker(const char* kind, const std::string& output, const std::string& detail,
                                    int64_t now) {
  if (!timeline_) return;
  timeline_->Mark(TimelineMarker{timeline_->Elapsed(now), kind, output, detail});
}

}  // namespace headroom
