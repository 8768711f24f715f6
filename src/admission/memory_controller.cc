// The memory-aware JobController: the adapter between the scheduler core (scheduler_core.h, which decides) and
// the build: edges and their estimates, the meter's samples, processes (freeze, thaw, kill), the guard, the ledger,
// status and explanations. This file carries out what the core decides; the guard's, ledger's, jobserver's and
// timeline's parts live in memory_controller_{guard,ledger,slots,timeline}.cc.
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
      core_(MakeAdmissionConfig(config)) {
  MemoryReading first = parts_.probe->Read(parts_.clock->NowMs());
  if (config_.budget_fraction > 0 && first.limit_bytes > 0) {
    // "--mem-budget=80%" is a share of what the machine or cgroup allows, fixed for this build.
    config_.budget_bytes = ScaleBytes(first.limit_bytes, config_.budget_fraction);
    core_.Configure(MakeAdmissionConfig(config_));
  }
  core_.set_budget_bytes(core_.policy().Budget(first));
  decisions_.budget_bytes = core_.budget_bytes();
  decisions_.reserve_bytes = core_.policy().Reserve(core_.budget_bytes());
  // What admission counts for a running job beside its estimate: its jobserver slots and what builds nested in it
  // still owe.
  core_.set_view_adjuster([this](CoreRunKey key, RunningJob* job) {
    auto it = running_.find(runner_of_meter_key_.at(static_cast<int>(key)));
    job->predicted_peak += slot_costs_.Charge(it->first);  // its jobserver slots (docs/jobserver.md)
    SizeNestedBuild(it->second, job);
  });
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
    AdmissionConfig guarded = GuardedAdmission(core_.policy().config());
    // v2: the kernel throttles the build above memory.high, where the guard then kills, so that (not the cap above
    // it) is what admission may plan on; a warm build filled to the budget was killed there every time.
    if (const uint64_t high = guard_->high_bytes(); high > 0 && high < core_.budget_bytes()) {
      core_.set_budget_bytes(high);
      guarded.budget_bytes = high;
      decisions_.budget_bytes = high;
    }
    core_.Configure(guarded);
    decisions_.reserve_bytes = core_.policy().Reserve(core_.budget_bytes());
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
  if (inserted) {
    core_.Track(edge->id, Describe(edge, &it->second));
    Predict(edge, it->second);
  }
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

CoreJobTraits MemoryController::Describe(const Edge* edge, EdgeState* state) {
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
  state->prior_peak_bytes = profile.prior.peak_bytes;
  state->prior_family = profile.prior.family;  // its text is left out: only an estimate's `why` reads it
  state->store_key = profile.store_key;
  CoreJobTraits traits;
  traits.class_key = profile.class_key;
  traits.family_key = profile.family_key;
  // Where a compile farm may take it, MayStart and JobStarted ask again (KeepsALocalCpuBusy).
  traits.compute_bound = IsComputeBound(state->prior_family);
  traits.unwatched = profile.prior.runs_in_compile_server;
  return traits;
}

JobProfile MemoryController::ProfileOf(const EdgeState& state, const CoreJobTraits& traits) {
  JobProfile profile;
  profile.class_key = traits.class_key;
  profile.family_key = traits.family_key;
  profile.prior.peak_bytes = state.prior_peak_bytes;
  profile.prior.family = state.prior_family;
  profile.prior.runs_in_compile_server = traits.unwatched;  // only such jobs are unwatched
  profile.store_key = state.store_key;
  return profile;
}

JobProfile MemoryController::ModeProfileOf(const Edge* edge, const EdgeState& state, const CoreJobTraits& traits,
                                           bool at_job_end) const {
  JobProfile profile = ProfileOf(state, traits);
  const auto& remote = at_job_end ? exec_mode_hooks_.ran_remote : exec_mode_hooks_.starts_remote;
  if (!remote || !remote(edge)) return profile;
  // A remote-bound edge is predicted on every walk while it waits: its class's " @remote" keys are made once.
  // A farm job's residual has its own keys and prior; sccache-dist's are the client's, as before (scale-out.md).
  auto [keys, added] = remote_keys_.try_emplace(profile.class_key);
  if (added) {
    keys->second = {
        parts_.estimator->InternKey(ExecModeKey(WithoutCompileServerKey(profile.class_key), ExecMode::kRemote)),
        parts_.estimator->InternKey(ExecModeKey(WithoutCompileServerKey(profile.family_key), ExecMode::kRemote))};
  }
  profile.prior.runs_in_compile_server = false;
  profile.class_key = keys->second.first;
  profile.family_key = keys->second.second;
  if (exec_mode_hooks_.residual_bytes) profile.prior.peak_bytes = exec_mode_hooks_.residual_bytes(edge);
  return profile;
}

Estimate MemoryController::PredictNow(const Edge* edge, const EdgeState& state, const CoreJobTraits& traits) {
  std::string hint;
  return parts_.estimator->Predict(DescriptionOf(edge, state, &hint), ModeProfileOf(edge, state, traits, false),
                                   EstimateDetail::kFiguresOnly);
}

void MemoryController::Predict(const Edge* edge, const EdgeState& state) {
  const Estimate estimate = PredictNow(edge, state, core_.TraitsOf(edge->id));
  core_.SetEstimate(edge->id, EstimateFigures::Of(estimate), parts_.estimator->generation());
}

void MemoryController::RefreshIfStale(const Edge* edge, const EdgeState& state) {
  if (core_.EstimateIsStale(edge->id, parts_.estimator->generation())) Predict(edge, state);
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
  if (const EstimateFigures* tracked = core_.FindEstimate(edge->id)) {
    duration_ms = tracked->duration_ms;
    peak_bytes = tracked->peak_bytes;
  } else {
    EdgeState transient;
    const Estimate estimate = PredictNow(edge, transient, Describe(edge, &transient));
    duration_ms = estimate.duration_ms;
    peak_bytes = estimate.peak_bytes;
  }
  uint64_t reserve = core_.policy().Reserve(core_.budget_bytes());
  uint64_t usable = core_.budget_bytes() > reserve ? core_.budget_bytes() - reserve : 0;
  return BuilderEdgeWeight(duration_ms, peak_bytes, usable, true);
}

MemoryReading MemoryController::Read() {
  return parts_.probe->Read(parts_.clock->NowMs());
}

bool MemoryController::KeepsALocalCpuBusy(const Edge* edge, const EdgeState& state) const {
  // A compile sent to a farm (distcc, icecc, sccache-dist) runs on another machine's CPU.
  const auto& remote = exec_mode_hooks_.starts_remote;
  return IsComputeBound(state.prior_family) && !(remote && remote(edge));
}

void MemoryController::BeginPass() {
  // A pass admits at most one job. Its reading may be a few milliseconds old: the policy itself reserves
  // what every running job (one started since the reading included) is still expected to grow, and
  // reading memory before each of hundreds of quick jobs a second would cost more than they do. A job
  // that ends holding real memory makes the next pass read afresh.
  EnsureGuard();  // a pass means there is work: the guard and the ledger come before its first decision
  const int64_t now = parts_.clock->NowMs();
  core_.BeginPass(AdmissionReading(now), now);
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
  // Once the pass is done (SchedulerCore::PassDone), the rest of the ready queue is not looked at: describing each
  // edge there would keep a state for it until it runs (a cold build of 10k ready jobs held 10k of them).
  if (core_.PassDone()) return false;
  const int64_t now = parts_.clock->NowMs();
  EdgeState& state = StateFor(edge);
  RefreshIfStale(edge, state);
  if (exec_mode_hooks_.starts_remote) core_.SetComputeBound(edge->id, KeepsALocalCpuBusy(edge, state));
  if (!core_.InPass()) BeginPass();
  const CoreStep step = core_.Consider(edge->id, static_cast<double>(edge->critical_path_weight), now);
  NoteStep(edge, state, step, now);
  return step.kind == CoreStep::Kind::kAdmitted;
}

void MemoryController::NoteStep(const Edge* edge, EdgeState& state, const CoreStep& step, int64_t now) {
  switch (step.kind) {
    case CoreStep::Kind::kSkipped:
      return;
    case CoreStep::Kind::kAdmitted:
      if (step.first_refusal) PublishHeadWait(0);
      NoteAdmitted(edge, state, step, now);
      return;
    case CoreStep::Kind::kWaitsForCpu:
      if (step.explain) Explain("waiting for a CPU: " + OutputOf(edge) + ": " + step.decision.reason);
      return;
    case CoreStep::Kind::kWaitsForMemory:
      if (step.first_refusal) PublishHeadWait(NeedOtherBuildsShouldLeave(edge));
      if (step.began_waiting) RecordMarker("wait", OutputOf(edge), step.decision.reason, now);
      if (step.explain) {
        Explain("waiting for memory: " + OutputOf(edge) + ": " + step.decision.reason + OtherBuildsNote());
      }
      return;
  }
}

void MemoryController::NoteAdmitted(const Edge* edge, EdgeState& state, const CoreStep& step, int64_t now) {
  state.last_wait_ms = static_cast<int32_t>(step.waited_ms);
  const AdmissionDecision& decision = step.decision;
  if (decision.early_start) Explain("started early: " + OutputOf(edge) + ": " + decision.reason);
  if (decision.over_budget) {
    const uint64_t peak = core_.EstimateOf(edge->id).peak_bytes;
    RecordMarker("over-budget", OutputOf(edge),
                 "expected ~" + FormatBytes(peak) + ", over the " + FormatBytes(core_.budget_bytes()) +
                     " budget: started alone",
                 now);
    parts_.status->Warning("'" + OutputOf(edge) + "' (expected to need ~" + FormatBytes(peak) +
                           ") does not fit in the memory left under the " + FormatBytes(core_.budget_bytes()) +
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
  if (exec_mode_hooks_.starts_remote) core_.SetComputeBound(edge->id, KeepsALocalCpuBusy(edge, state));
  Running running;
  running.edge = edge;
  running.runner_id = id;
  running.meter_key = pending_meter_key_;
  running.job = &core_.Start(edge->id, static_cast<CoreRunKey>(pending_meter_key_),
                             static_cast<double>(edge->critical_path_weight), now)
                     .view;
  // The last tick's figure, not a fresh read: a hit between that tick and now can only make a failure look
  // like the cap's doing (one retry), never hide one.
  if (guard_active()) running.guard_limit_hits_at_start = guard_->limit_hits();
  parts_.meter->JobStarted(pending_meter_key_, runner->ProcessGroupOf(id));
  RecordJobStart(&running, edge, state, now);
  // Said the first time such a class runs (a build dir's first build, unless the user store knows it), not on
  // every build after. A farm job's local part is sccache-dist's known limit (docs/scale-out.md), not this one.
  const CoreJobTraits& traits = core_.TraitsOf(edge->id);
  if (traits.unwatched && !warned_compile_server_ && !parts_.estimator->KnowsClass(traits.class_key) &&
      !(exec_mode_hooks_.starts_remote && exec_mode_hooks_.starts_remote(edge)))
    WarnAboutCompileServer(edge);
  runner_of_meter_key_[pending_meter_key_] = id;  // the core's views ask for it (slots are by runner id)
  running_.insert_or_assign(id, running);
  PublishToLedger();
}

int MemoryController::TickIntervalMs() const { return running_.empty() ? -1 : SampleIntervalMs(); }

int MemoryController::SampleIntervalMs() const { return core_.SampleIntervalMs(parts_.clock->NowMs()); }

MemoryController::Running* MemoryController::FindByKey(uint64_t key) {
  auto runner = runner_of_meter_key_.find(static_cast<int>(key));
  if (runner == runner_of_meter_key_.end()) return nullptr;
  auto it = running_.find(runner->second);
  return it == running_.end() ? nullptr : &it->second;
}

bool MemoryController::KilledByHeadroom(const Running& running) const {
  auto it = core_.runs().find(static_cast<CoreRunKey>(running.meter_key));
  return it != core_.runs().end() && it->second.killed;
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
    core_.Observe(static_cast<CoreRunKey>(running.meter_key), bytes, now, now - running.job->started_ms);
  }
  const MemoryReading reading = Read();
  PublishToLedger();
  pass_reading_ = reading;
  pass_reading_ms_ = now;
  CheckEarlyStarts(AdmissionReading(now), now, runner);
  CheckGuard(now, runner);
  for (const CoreAction& action : core_.SafetyActions(reading, now)) CarryOut(action, runner);
  RecordSample(reading, now);
  PublishStatus(reading);
  PrintWarnings();
}

// The guard's kill goes through the core like the safety net's.
void MemoryController::ApplySafetyAction(const SafetyAction& action, ProcessRunner* runner) {
  if (core_.Apply(action, parts_.clock->NowMs())) CarryOut(CoreAction::Of(action), runner);
}

void MemoryController::CarryOut(const CoreAction& action, ProcessRunner* runner) {
  Running* running = FindByKey(action.run);
  if (!running) return;
  const std::string& output = running->edge->outputs[0]->path;
  const int64_t now = parts_.clock->NowMs();
  switch (action.kind) {
    case CoreAction::Kind::kFreeze:
      Pause(running, runner);
      RecordMarker("freeze", output, action.reason, now);
      Explain("froze '" + output + "': " + action.reason);
      break;
    case CoreAction::Kind::kThaw:
      Resume(*running, runner);
      RecordMarker("thaw", output, action.reason, now);
      Explain("thawed '" + output + "': " + action.reason);
      break;
    case CoreAction::Kind::kKill:
      RecordMarker("kill", output, action.reason, now);
      // A stopped process group must be continued for SIGKILL to take effect promptly everywhere.
      runner->SignalJob(running->runner_id, SIGKILL);
      if (running->job->frozen) Resume(*running, runner);
      Explain("killed '" + output + "' to save the build: " + action.reason);
      break;
    case CoreAction::Kind::kPark:
      Pause(running, runner);
      Explain("paused '" + output + "': " + action.reason);
      break;
    case CoreAction::Kind::kClimb:
      Resume(*running, runner);
      Explain("let '" + output + "' climb: " + action.reason);
      break;
    case CoreAction::Kind::kResume:
      Resume(*running, runner);
      Explain("resumed '" + output + "': " + action.reason);
      break;
  }
}

void MemoryController::Pause(Running* running, ProcessRunner* runner) {
  // The cgroup freezer stops the whole tree at once; without it the process group is stopped.
  running->frozen_by_signal = !parts_.meter->Freeze(running->meter_key);
  if (running->frozen_by_signal) runner->SignalJob(running->runner_id, SIGSTOP);
}

// Early starts are parked and resumed by the core (SchedulerCore::CheckEarlyStarts); this freezes and thaws them.
void MemoryController::CheckEarlyStarts(const MemoryReading& reading, int64_t now, ProcessRunner* runner) {
  for (const CoreAction& action : core_.CheckEarlyStarts(reading, now)) CarryOut(action, runner);
}

// Undoes a freeze both ways: the freezer cgroup is thawed even for a job stopped by signal (a freeze that fell
// back to SIGSTOP may have frozen part of the tree first), and a signal-stopped group gets SIGCONT.
void MemoryController::Resume(const Running& running, ProcessRunner* runner) {
  parts_.meter->Thaw(running.meter_key);
  if (running.frozen_by_signal && runner) runner->SignalJob(running.runner_id, SIGCONT);
}

// The protection such jobs get is a first build's, and only the docs can say what to do about it.
void MemoryController::WarnAboutCompileServer(const Edge* edge) {
  warned_compile_server_ = true;
  parts_.status->Warning("'" + OutputOf(edge) +
                         "' compiles in sccache's server, outside its own processes: headroom sizes such jobs by "
                         "their commands and cannot measure, pause or stop their compiles (see headroom's "
                         "docs/memory-observation.md)");
}

bool MemoryController::JobFinished(Edge* edge, JobExit* exit) {
  auto it = running_.find(exit->id);
  if (it == running_.end()) return false;
  Running running = it->second;
  running_.erase(it);
  runner_of_meter_key_.erase(running.meter_key);
  const SchedulerCore::Run run = core_.End(static_cast<CoreRunKey>(running.meter_key));
  running.job = &run.view;
  EdgeState& state = StateFor(edge);

  JobExit metered = *exit;
  metered.id = running.meter_key;
  const JobMemoryResult result = parts_.meter->Finish(metered);
  if (result.peak_bytes >= kFreshReadingAfterBytes) pass_reading_ms_ = -1;

  const bool failed_at_limit = !run.killed && !result.oom.oom_killed && FailedAtGuardLimit(edge, running, *exit);
  HistoryRecord record;
  record.peak_bytes = std::max(result.peak_bytes, run.view.peak_rss);
  record.duration_ms = exit->wall_ms;
  record.method = ToPeakMethod(result.peak_source);
  // A failure at the guard's limit is recorded as headroom's kill: its peak is where the cap stopped it, a
  // lower bound like a killed job's.
  record.outcome = run.killed || failed_at_limit ? JobOutcome::kSafetyKilled
                   : result.oom.oom_killed       ? JobOutcome::kOomKilled
                                                 : JobOutcome::kCompleted;
  // A pause stretched its run without growth: its samples would say it rose later than it does, so such a run
  // keeps what the edge's earlier runs said (unknown when they said nothing) rather than making the next
  // estimate's curve unknown (RiseCurve::Faster).
  if (record.outcome == JobOutcome::kCompleted) {
    record.rise = run.paused_once ? core_.EstimateOf(edge->id).rise
                                  : run.rise.Finish(record.peak_bytes, record.duration_ms);
  }
  RecordJobEnd(running, parts_.clock->NowMs(), record.peak_bytes, PeakSourceName(result.peak_source),
               run.killed                ? "safety-killed"
               : result.oom.oom_killed   ? "oom-killed"
               : exit->success()         ? "ok"
                                         : "failed",
               exit->ExitStatusCode());
  if (timeline_ && exec_mode_hooks_.run_mode) timeline_->SetExecMode(running.timeline_job, exec_mode_hooks_.run_mode(edge));
  slot_costs_.JobEnded(exit->id, record.peak_bytes);  // a job that held slots teaches what one costs
  if (run.killed) EndKillTurnOnceVictimsEnded();
  nested_owed_.erase(running.meter_key);
  PublishToLedger();
  std::string learn_error, hint;
  const JobDescription job = DescriptionOf(edge, state, &hint);
  const JobProfile profile = ModeProfileOf(edge, state, core_.TraitsOf(edge->id), true);
  if (!parts_.estimator->Learn(job, record, &learn_error, &profile) && !learn_error.empty())
    parts_.status->Warning("recording memory history: " + learn_error);

  if (record.outcome == JobOutcome::kCompleted) {
    edges_.erase(edge);  // done with: what it taught lives in the history now.
    core_.Forget(edge->id);
    return false;
  }
  const MemoryFailureKind kind = run.killed        ? MemoryFailureKind::kHeadroomKill
                                 : failed_at_limit ? MemoryFailureKind::kFailedAtLimit
                                                   : MemoryFailureKind::kKernelOomKill;
  return HandleMemoryFailure(edge, result, kind, result.peak_bytes, exit);
}

bool MemoryController::HandleMemoryFailure(Edge* edge, const JobMemoryResult& result, MemoryFailureKind kind,
                                           uint64_t peak, JobExit* exit) {
  const int64_t now = parts_.clock->NowMs();
  if (kind == MemoryFailureKind::kKernelOomKill) {
    RecordMarker("oom", OutputOf(edge), "the kernel's OOM killer ended it (" + result.oom.explanation + ")", now);
  }
  const RequeueDecision decision = core_.MemoryFailure(edge->id, kind, peak, RequeueFor(kind, peak));
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
  RecordMarker("requeue", OutputOf(edge), decision.message, now);
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
  status.budget_bytes = core_.budget_bytes();
  status.jobs_waiting_for_memory = core_.waiting_now();
  if (exec_mode_hooks_.status_fields) exec_mode_hooks_.status_fields(&status);
  parts_.status->UpdateMemory(status);
}

void MemoryController::BuildEnded() {
  // Whatever still runs here is being aborted; its measurements do not teach anything, but the
  // timeline keeps it, as the job the build stopped in the middle of.
  const int64_t now = parts_.clock->NowMs();
  if (!running_.empty()) ReleaseGuardForAbort();
  for (const auto& [id, running] : running_) {
    const uint64_t peak = std::max(parts_.meter->PeakSoFar(running.meter_key), running.job->peak_rss);
    RecordJobEnd(running, now, peak, "sampled", "interrupted", -1);
    parts_.meter->Abandon(running.meter_key);
    core_.End(static_cast<CoreRunKey>(running.meter_key));
  }
  running_.clear();
  runner_of_meter_key_.clear();
}

}  // namespace headroom
