// The build simulator's event loop: the scheduler core's admission walks, early starts, safety net and requeues
// (as the build runs them), progress under CPU sharing, the simulated kernel's OOM kills and learning, tick by tick.
#include "headroom/sim/simulator.h"

#include <algorithm>
#include <cmath>

#include "headroom/estimator/command_line.h"
#include "headroom/util/byte_size.h"

namespace headroom::sim {

uint64_t SimJob::MemoryAt(int64_t progress_ms) const {
  double p = std::clamp(static_cast<double>(progress_ms) / static_cast<double>(duration_ms), 0.0, 1.0);
  double base = std::min(static_cast<double>(peak_bytes), 16.0 * kMiB);
  double peak = static_cast<double>(peak_bytes);
  if (p < ramp_end) return static_cast<uint64_t>(base + (peak - base) * p / ramp_end);
  if (p <= release_start) return peak_bytes;
  return static_cast<uint64_t>(peak - (peak - base) * (p - release_start) / (1.0 - release_start));
}

uint64_t Fnv1a(std::string_view text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : text) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return hash;
}

struct Simulator::JobState {
  int missing_deps = 0;
  bool ready = false;
  std::optional<JobProfile> profile;  // parsed once, as MemoryController does.
};

struct Simulator::Active {
  size_t job;
  CoreRunKey run = 0;      // its run in the core, whose view admission and the safety net see
  const RunningJob* view = nullptr;  // that view (SchedulerCore::Run), valid while it runs
  double progress_ms = 0;  // work done: real time scaled by the CPU share it got.
  int max_concurrency = 0;
  int64_t progress() const { return std::llround(progress_ms); }
};

Simulator::Simulator(const std::vector<SimJob>& jobs, const SimConfig& config, HistoryStore* history)
    : jobs_(jobs), config_(config),
      own_estimator_(std::make_unique<Estimator>(history, FileSizeFn{}, config.estimator)),
      estimator_(own_estimator_.get()), core_(WithBudget(config), config.safety), state_(jobs.size()) {
  core_.set_budget_bytes(config.budget);
}

Simulator::Simulator(const std::vector<SimJob>& jobs, const SimConfig& config, Estimator* estimator)
    : jobs_(jobs), config_(config), estimator_(estimator), core_(WithBudget(config), config.safety),
      state_(jobs.size()) {
  core_.set_budget_bytes(config.budget);
}

Simulator::~Simulator() = default;

SimResult Simulator::Run() {
  ComputePriorities_();
  for (size_t i = 0; i < jobs_.size(); ++i) state_[i].missing_deps = static_cast<int>(jobs_[i].deps.size());
  for (size_t i = 0; i < jobs_.size(); ++i) {
    for (size_t d : jobs_[i].deps) dependents_[d].push_back(i);
    if (jobs_[i].deps.empty()) MakeReady(i);
  }
  while (finished_ + failed_ < jobs_.size() && now_ < config_.time_limit_ms) {
    if (result_.failures.size() > 0 && running_.empty()) break;
    Admit();
    now_ += config_.tick_ms;
    Advance();
    KernelOomKills();
    FinishJobs();
    if (config_.fixed_j == 0) ApplySafetyNet();
  }
  result_.completed = finished_ == jobs_.size();
  result_.makespan_ms = now_;
  const MemoryDecisions& decisions = core_.decisions();
  result_.freezes = decisions.freezes;
  result_.safety_kills = decisions.safety_kills;
  result_.over_budget_admissions = decisions.over_budget_starts;
  result_.decisions = decisions;
  return result_;
}

AdmissionConfig Simulator::WithBudget(const SimConfig& config) {
  AdmissionConfig admission = config.admission;
  admission.budget_bytes = config.budget;
  // The machine's CPUs cap long compute-bound jobs as they do in a real build (AdmissionConfig::cpus).
  if (admission.cpus == 0 && config.cpu_cores > 0) admission.cpus = std::max(1, static_cast<int>(config.cpu_cores));
  return admission;
}

JobDescription Simulator::Describe(size_t i) const {
  const SimJob& job = jobs_[i];
  JobDescription d;
  d.output = job.output;
  d.command = job.command;
  d.rule = job.rule;
  d.rspfile_content = job.rspfile_content;
  d.command_hash = job.command_hash != 0 ? job.command_hash : Fnv1a(job.command);
  if (job.mem_hint) d.mem_hint = *job.mem_hint;
  return d;
}

// Estimates change only when something was learned (the estimator's generation moved), as in the build
// (SchedulerCore::EstimateIsStale); a requeue's raised estimate is a floor that stays.
const EstimateFigures& Simulator::EstimateOf(size_t i) {
  JobState& s = state_[i];
  if (!s.profile) {
    s.profile = estimator_->Profile(Describe(i));
    core_.Track(i, CoreJobTraits{s.profile->class_key, s.profile->family_key, IsComputeBound(s.profile->prior.family),
                                 s.profile->prior.runs_in_compile_server});
    core_.SetEstimate(i, EstimateFigures::Of(estimator_->Predict(Describe(i), *s.profile)), estimator_->generation());
  } else if (core_.EstimateIsStale(i, estimator_->generation())) {
    core_.SetEstimate(i, EstimateFigures::Of(estimator_->Predict(Describe(i), *s.profile)), estimator_->generation());
  }
  return core_.EstimateOf(i);
}

// The builder's weights (MemoryController::EdgeCost): BuilderEdgeWeight per job, the exclusive ones chained,
// handed to ComputePriorities as plain durations.
void Simulator::UseBuilderWeights(bool any_history, std::vector<PriorityJob>* costs) const {
  uint64_t reserve = core_.policy().Reserve(config_.budget);
  uint64_t usable = config_.budget > reserve ? config_.budget - reserve : 0;
  std::vector<int64_t> weights(costs->size());
  std::vector<bool> exclusive(costs->size());
  for (size_t i = 0; i < costs->size(); ++i) {
    EdgeWeight w = BuilderEdgeWeight((*costs)[i].duration_ms, (*costs)[i].peak_bytes, usable, any_history);
    weights[i] = w.cost;
    exclusive[i] = w.exclusive;
  }
  ChainExclusiveCosts(weights, exclusive);
  for (size_t i = 0; i < costs->size(); ++i) (*costs)[i] = {weights[i], 0};
}

void Simulator::ComputePriorities_() {
  std::vector<std::vector<uint32_t>> dependents(jobs_.size());
  std::vector<PriorityJob> costs(jobs_.size());
  const bool any_history = estimator_->HasHistory();
  for (size_t i = 0; i < jobs_.size(); ++i) {
    for (size_t d : jobs_[i].deps) dependents[d].push_back(static_cast<uint32_t>(i));
    const EstimateFigures& e = EstimateOf(i);
    costs[i] = {e.duration_ms, e.peak_bytes};
  }
  if (config_.builder_priorities) UseBuilderWeights(any_history, &costs);
  std::string error;
  PriorityMode mode = config_.builder_priorities ? PriorityMode::kDuration : config_.priority;
  priority_ = ComputePriorities(dependents, costs, mode, config_.budget, &error).value();
}

void Simulator::MakeReady(size_t i) {
  state_[i].ready = true;
  ready_.insert({-priority_[i], i});
}

uint64_t Simulator::Used() const {
  uint64_t used = 0;
  for (const Active& run : running_) used += jobs_[run.job].MemoryAt(run.progress());
  return used;
}

MemoryReading Simulator::Reading() const {
  MemoryReading reading;
  reading.taken_at_ms = now_;
  reading.limit_bytes = config_.budget;
  reading.used_bytes = std::min(Used(), config_.budget);
  reading.available_bytes = config_.budget - reading.used_bytes;
  return reading;
}

// Highest priority first, manifest order among equals (ninja's tie-break).
std::vector<size_t> Simulator::ReadyByPriority() const {
  std::vector<size_t> ready;
  ready.reserve(ready_.size());
  for (const auto& [negated_priority, i] : ready_) ready.push_back(i);
  return ready;
}

// As the builder does: one admission walk per start, each against the running jobs as they are then, until a walk
// admits nothing or the slots are full. The reading is taken once a tick (the build reuses one for 20 ms).
void Simulator::Admit() {
  int free_slots = (config_.fixed_j > 0 ? config_.fixed_j : config_.cores) - static_cast<int>(running_.size());
  if (free_slots <= 0) return;
  std::vector<size_t> ready = ReadyByPriority();
  if (config_.fixed_j > 0) {
    for (size_t k = 0; k < ready.size() && k < static_cast<size_t>(free_slots); ++k) Start(ready[k]);
    return;
  }
  if (config_.candidate_window > 0 && ready.size() > config_.candidate_window) ready.resize(config_.candidate_window);
  const MemoryReading reading = Reading();
  for (; free_slots > 0; --free_slots) {
    const std::optional<size_t> admitted = Walk(ready, reading);
    if (!admitted) break;
    Start(*admitted);
    ready.erase(std::find(ready.begin(), ready.end(), *admitted));
  }
}

std::optional<size_t> Simulator::Walk(const std::vector<size_t>& ready, const MemoryReading& reading) {
  core_.BeginPass(reading, now_);
  std::string head_reason;
  std::optional<size_t> admitted;
  for (size_t i : ready) {
    EstimateOf(i);
    const CoreStep step = core_.Consider(i, priority_[i], now_);
    if (step.kind == CoreStep::Kind::kSkipped) break;
    if (step.kind == CoreStep::Kind::kAdmitted) {
      admitted = i;
      break;
    }
    if (head_reason.empty()) head_reason = step.decision.reason;
  }
  // Figures in the reason change every tick; only a new kind of wait is worth a line.
  std::string reason_kind = head_reason.substr(0, head_reason.find_first_of("0123456789"));
  if (!ready.empty() && reason_kind != last_head_reason_) {
    Trace("wait", ready.front(), head_reason);
    last_head_reason_ = reason_kind;
  }
  return admitted;
}

void Simulator::Start(size_t i) {
  state_[i].ready = false;
  ready_.erase({-priority_[i], i});
  const EstimateFigures& e = EstimateOf(i);
  Active run;
  run.job = i;
  run.run = next_run_++;
  run.view = &core_.Start(i, run.run, priority_[i], now_).view;
  running_.push_back(run);  // running_ stays oldest first.
  result_.started_ms[i] = now_;
  Trace("start", i, FormatBytes(e.peak_bytes));
}

// The share of real time each running job turns into work: 1 unless the jobs that are not frozen want more
// CPUs than the machine has, which they then share evenly (the kernel's fair scheduler, roughly).
double Simulator::ProgressRate() const {
  if (config_.cpu_cores <= 0) return 1.0;
  double demand = 0;
  for (const Active& run : running_) {
    if (!run.view->frozen) demand += jobs_[run.job].cpu_demand;
  }
  demand += config_.cpu_other_demand;
  return demand > config_.cpu_cores ? config_.cpu_cores / demand : 1.0;
}

void Simulator::Advance() {
  const double step = static_cast<double>(config_.tick_ms) * ProgressRate();
  for (Active& run : running_) {
    if (!run.view->frozen) run.progress_ms += step;
    core_.Observe(run.run, jobs_[run.job].MemoryAt(run.progress()), now_, run.progress());
    run.max_concurrency = std::max(run.max_concurrency, static_cast<int>(running_.size()));
  }
  result_.peak_used = std::max(result_.peak_used, Used());
}

void Simulator::KernelOomKills() {
  while (Used() > config_.budget) {
    auto biggest = std::max_element(running_.begin(), running_.end(), [&](const Active& a, const Active& b) {
      return jobs_[a.job].MemoryAt(a.progress()) < jobs_[b.job].MemoryAt(b.progress());
    });
    ++result_.oom_kills;
    Fail(static_cast<size_t>(biggest - running_.begin()), /*by_kernel=*/true);
  }
}

// A killed job: learn the lower bound it reached, then retry, retry alone, or give up (the core decides).
void Simulator::Fail(size_t index, bool by_kernel) {
  Active active = running_[index];
  running_.erase(running_.begin() + static_cast<long>(index));
  const SchedulerCore::Run run = core_.End(active.run);
  Trace(by_kernel ? "oom" : "kill", active.job, "at " + FormatBytes(run.view.peak_rss));
  std::string error;
  estimator_->Learn(Describe(active.job),
                    {run.view.peak_rss, active.progress(), PeakMethod::kCgroup,
                     by_kernel ? JobOutcome::kOomKilled : JobOutcome::kSafetyKilled},
                    &error, &*state_[active.job].profile);
  const RequeueDecision decision =
      core_.MemoryFailure(active.job, by_kernel ? MemoryFailureKind::kKernelOomKill : MemoryFailureKind::kHeadroomKill,
                          run.view.peak_rss, config_.requeue);
  if (decision.kind == RequeueDecision::Kind::kGiveUp) {
    result_.failures.push_back(decision.message);
    result_.failed_jobs.push_back(active.job);
    ++failed_;
    return;
  }
  ++result_.requeues;
  MakeReady(active.job);
}

void Simulator::FinishJobs() {
  for (size_t k = 0; k < running_.size();) {
    Active& active = running_[k];
    if (active.progress() < jobs_[active.job].duration_ms) {
      ++k;
      continue;
    }
    const SchedulerCore::Run run = core_.End(active.run);
    std::string error;
    // A run frozen or parked keeps the curve its estimate had, as in a real build.
    const RiseCurve rise =
        run.paused_once ? EstimateOf(active.job).rise : run.rise.Finish(run.view.peak_rss, active.progress());
    estimator_->Learn(Describe(active.job),
                      {run.view.peak_rss, active.progress(), PeakMethod::kCgroup, JobOutcome::kCompleted, rise},
                      &error, &*state_[active.job].profile);
    result_.finished_ms[active.job] = now_;
    Trace("end", active.job, "peak " + FormatBytes(run.view.peak_rss));
    result_.max_concurrency_while_running[active.job] = active.max_concurrency;
    ++finished_;
    core_.Forget(active.job);
    for (size_t dependent : dependents_[active.job]) {
      if (--state_[dependent].missing_deps == 0) MakeReady(dependent);
    }
    running_.erase(running_.begin() + static_cast<long>(k));
  }
}

// The build's tick after sampling: early starts parked or resumed, then the safety net.
void Simulator::ApplySafetyNet() {
  const MemoryReading reading = Reading();
  for (const CoreAction& action : core_.CheckEarlyStarts(reading, now_)) {
    auto run = std::find_if(running_.begin(), running_.end(), [&](const Active& r) { return r.run == action.run; });
    Trace(action.kind == CoreAction::Kind::kPark ? "park" : "resume", run->job, action.reason);
  }
  for (const CoreAction& action : core_.SafetyActions(reading, now_)) {
    auto run = std::find_if(running_.begin(), running_.end(), [&](const Active& r) { return r.run == action.run; });
    if (run == running_.end()) continue;
    Trace(action.kind == CoreAction::Kind::kFreeze ? "freeze"
          : action.kind == CoreAction::Kind::kThaw ? "thaw"
                                                   : "netkill",
          run->job, action.reason);
    if (action.kind == CoreAction::Kind::kKill) Fail(static_cast<size_t>(run - running_.begin()), /*by_kernel=*/false);
  }
}

void Simulator::Trace(const char* what, size_t job, const std::string& detail) const {
  if (!config_.trace) return;
  std::fprintf(config_.trace, "%7.1f %-6s %-10s run %2zu used %5.1f GiB  %s\n", static_cast<double>(now_) / 1000.0,
               what, jobs_[job].output.c_str(), running_.size(), static_cast<double>(Used()) / kGiB,
               detail.c_str());
}

SimResult Simulate(const std::vector<SimJob>& jobs, const SimConfig& config, HistoryStore* history) {
  return Simulator(jobs, config, history).Run();
}

}  // namespace headroom::sim
