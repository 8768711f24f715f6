// The build simulator's event loop: admission passes, progress under CPU sharing, the simulated kernel's
// OOM kills, the safety net, requeues and learning, one tick at a time.
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
  int64_t ready_since = 0;
  int attempts = 0;               // failed runs so far.
  uint64_t raised_estimate = 0;   // floor from the requeue policy.
  bool alone = false;
  std::optional<JobProfile> profile;  // parsed once, as MemoryController does.
  std::optional<Estimate> estimate;
  uint64_t estimate_generation = ~0ull;
};

struct Simulator::Active {
  size_t job;
  double progress_ms = 0;  // work done: real time scaled by the CPU share it got.
  RunningJob view;
  RiseRecorder rise;  // its samples by progress, for the rise curve the history learns (as MemoryController's)
  bool paused_once = false;
  int max_concurrency = 0;
  int64_t progress() const { return std::llround(progress_ms); }
};

Simulator::Simulator(const std::vector<SimJob>& jobs, const SimConfig& config, HistoryStore* history)
    : jobs_(jobs), config_(config),
      own_estimator_(std::make_unique<Estimator>(history, FileSizeFn{}, config.estimator)),
      estimator_(own_estimator_.get()), policy_(WithBudget(config)), net_(policy_, config.safety),
      state_(jobs.size()) {}

Simulator::Simulator(const std::vector<SimJob>& jobs, const SimConfig& config, Estimator* estimator)
    : jobs_(jobs), config_(config), estimator_(estimator), policy_(WithBudget(config)), net_(policy_, config.safety),
      state_(jobs.size()) {}

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

// Estimates change only when something was learned (the estimator's generation moved), exactly as in
// MemoryController::RefreshIfStale; a requeue's raised estimate is a floor that stays.
const Estimate& Simulator::EstimateOf(size_t i) {
  JobState& s = state_[i];
  if (!s.profile) s.profile = estimator_->Profile(Describe(i));
  if (!s.estimate || s.estimate_generation != estimator_->generation()) {
    s.estimate = estimator_->Predict(Describe(i), *s.profile);
    s.estimate->peak_bytes = std::max(s.estimate->peak_bytes, s.raised_estimate);
    s.estimate_generation = estimator_->generation();
  }
  return *s.estimate;
}

// The builder's weights (MemoryController::EdgeCost): BuilderEdgeWeight per job, the exclusive ones chained,
// handed to ComputePriorities as plain durations.
void Simulator::UseBuilderWeights(bool any_history, std::vector<PriorityJob>* costs) const {
  uint64_t reserve = policy_.Reserve(config_.budget);
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
    const Estimate& e = EstimateOf(i);
    costs[i] = {e.duration_ms, e.peak_bytes};
  }
  if (config_.builder_priorities) UseBuilderWeights(any_history, &costs);
  std::string error;
  PriorityMode mode = config_.builder_priorities ? PriorityMode::kDuration : config_.priority;
  priority_ = ComputePriorities(dependents, costs, mode, config_.budget, &error).value();
}

// As MemoryController::IsGuess: a prior not raised by a requeue.
bool Simulator::IsGuess(size_t i) {
  return EstimateOf(i).source == EstimateSource::kPrior && state_[i].raised_estimate == 0;
}

bool Simulator::SizedFromOwnRuns(size_t i) {
  // As MemoryController::SizedFromOwnRuns: a requeue's raised estimate is not what its runs reached.
  return EstimateOf(i).source == EstimateSource::kEdgeHistory && state_[i].raised_estimate == 0;
}

void Simulator::MakeReady(size_t i) {
  state_[i].ready = true;
  state_[i].ready_since = now_;
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

std::vector<RunningJob> Simulator::Views() const {
  std::vector<RunningJob> views;
  for (const Active& run : running_) views.push_back(run.view);
  return views;
}

Candidate Simulator::CandidateOf(size_t i) {
  const Estimate& e = EstimateOf(i);
  Candidate c;
  c.id = i;
  c.class_key = e.class_key;
  c.family_key = e.family_key;
  c.predicted_peak = e.peak_bytes;
  c.unknown_heavy = e.unknown_heavy;
  c.from_prior = IsGuess(i);
  c.measured = e.confident;
  c.must_run_alone = state_[i].alone;
  c.ready_since_ms = state_[i].ready_since;
  c.expected_ms = e.duration_ms;
  c.rise = e.rise;
  c.own_history = SizedFromOwnRuns(i);
  c.kin = KinScopeOf(e.source);
  c.compute_bound = IsComputeBound(state_[i].profile->prior.family);
  c.priority = priority_[i];
  return c;
}

void Simulator::Admit() {
  int free_slots = (config_.fixed_j > 0 ? config_.fixed_j : config_.cores) - static_cast<int>(running_.size());
  if (free_slots <= 0) return;
  std::vector<size_t> ready = ReadyByPriority();
  if (config_.fixed_j > 0) {
    for (size_t k = 0; k < ready.size() && k < static_cast<size_t>(free_slots); ++k) {
      Start(ready[k], false, EstimateOf(ready[k]).peak_bytes);
    }
    return;
  }
  if (config_.candidate_window > 0 && ready.size() > config_.candidate_window) ready.resize(config_.candidate_window);
  std::vector<Candidate> candidates;
  for (size_t i : ready) candidates.push_back(CandidateOf(i));
  std::vector<RunningJob> views = Views();
  AdmissionPolicy::TickResult tick = policy_.PlanTick(Reading(), views, candidates, free_slots, now_);
  // Figures in the reason change every tick; only a new kind of wait is worth a line.
  std::string reason_kind = tick.head_reason.substr(0, tick.head_reason.find_first_of("0123456789"));
  if (reason_kind != last_head_reason_) {
    Trace("wait", candidates.empty() ? 0 : candidates.front().id, tick.head_reason);
    last_head_reason_ = reason_kind;
  }
  for (size_t k = 0; k < tick.admitted.size(); ++k) {
    const uint64_t id = tick.admitted[k];
    bool over = std::find(tick.over_budget.begin(), tick.over_budget.end(), id) != tick.over_budget.end();
    result_.over_budget_admissions += over ? 1 : 0;
    Start(id, over || state_[id].alone, tick.counted[k]);
  }
}

void Simulator::Start(size_t i, bool alone, uint64_t counted_peak) {
  state_[i].ready = false;
  ready_.erase({-priority_[i], i});
  Active run;
  run.job = i;
  const Estimate& e = EstimateOf(i);
  run.view.id = i;
  run.view.class_key = e.class_key;
  run.view.family_key = e.family_key;
  run.view.predicted_peak = counted_peak;  // what admission counted for it
  run.view.started_ms = run.view.last_growth_ms = now_;
  if (e.duration_ms > 0) run.view.expected_end_ms = now_ + e.duration_ms;
  run.view.runs_alone = alone;
  run.view.heavy = e.peak_bytes >= policy_.config().heavy_threshold;
  run.view.rise = e.rise;
  run.view.own_history = SizedFromOwnRuns(i);
  run.view.compute_bound = IsComputeBound(state_[i].profile->prior.family);
  run.view.priority = priority_[i];
  running_.push_back(run);  // running_ stays oldest first.
  result_.started_ms[i] = now_;
  Trace("start", i, e.why + " = " + FormatBytes(e.peak_bytes));
}

// The share of real time each running job turns into work: 1 unless the jobs that are not frozen want more
// CPUs than the machine has, which they then share evenly (the kernel's fair scheduler, roughly).
double Simulator::ProgressRate() const {
  if (config_.cpu_cores <= 0) return 1.0;
  double demand = 0;
  for (const Active& run : running_) {
    if (!run.view.frozen) demand += jobs_[run.job].cpu_demand;
  }
  demand += config_.cpu_other_demand;
  return demand > config_.cpu_cores ? config_.cpu_cores / demand : 1.0;
}

void Simulator::Advance() {
  const double step = static_cast<double>(config_.tick_ms) * ProgressRate();
  for (Active& run : running_) {
    if (!run.view.frozen) run.progress_ms += step;
    const uint64_t bytes = jobs_[run.job].MemoryAt(run.progress());
    MemoryTrack::Observe(&run.view, bytes, now_);
    run.rise.Sample(run.progress(), bytes);
    run.paused_once = run.paused_once || run.view.frozen;
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

// A killed job: learn the lower bound it reached, then retry, retry alone, or give up.
void Simulator::Fail(size_t index, bool by_kernel) {
  Active run = running_[index];
  running_.erase(running_.begin() + static_cast<long>(index));
  Trace(by_kernel ? "oom" : "kill", run.job, "at " + FormatBytes(run.view.peak_rss));
  JobState& s = state_[run.job];
  std::string error;
  estimator_->Learn(Describe(run.job),
                    {run.view.peak_rss, run.progress(), PeakMethod::kCgroup,
                     by_kernel ? JobOutcome::kOomKilled : JobOutcome::kSafetyKilled},
                    &error);
  RequeueDecision decision = DecideRequeue(++s.attempts, run.view.peak_rss, run.view.predicted_peak,
                                           config_.budget, by_kernel, config_.requeue);
  if (decision.kind == RequeueDecision::Kind::kGiveUp) {
    result_.failures.push_back(decision.message);
    result_.failed_jobs.push_back(run.job);
    ++failed_;
    return;
  }
  ++result_.requeues;
  s.raised_estimate = decision.new_estimate;
  s.alone = config_.fixed_j == 0 && decision.kind == RequeueDecision::Kind::kRetryAlone;
  MakeReady(run.job);
}

void Simulator::FinishJobs() {
  for (size_t k = 0; k < running_.size();) {
    Active& run = running_[k];
    if (run.progress() < jobs_[run.job].duration_ms) {
      ++k;
      continue;
    }
    std::string error;
    // A run frozen by the net keeps the curve its estimate had, as in a real build.
    const RiseCurve rise = run.paused_once ? EstimateOf(run.job).rise : run.rise.Finish(run.view.peak_rss, run.progress());
    estimator_->Learn(Describe(run.job),
                      {run.view.peak_rss, run.progress(), PeakMethod::kCgroup, JobOutcome::kCompleted, rise}, &error);
    result_.finished_ms[run.job] = now_;
    Trace("end", run.job, "peak " + FormatBytes(run.view.peak_rss));
    result_.max_concurrency_while_running[run.job] = run.max_concurrency;
    ++finished_;
    for (size_t dependent : dependents_[run.job]) {
      if (--state_[dependent].missing_deps == 0) MakeReady(dependent);
    }
    running_.erase(running_.begin() + static_cast<long>(k));
  }
}

void Simulator::ApplySafetyNet() {
  std::vector<RunningJob> views = Views();
  for (const SafetyAction& action : net_.Decide(Reading(), views, now_)) {
    auto run = std::find_if(running_.begin(), running_.end(),
                            [&](const Active& r) { return r.view.id == action.job_id; });
    if (run == running_.end()) continue;
    Trace(action.kind == SafetyAction::Kind::kFreeze ? "freeze"
          : action.kind == SafetyAction::Kind::kThaw ? "thaw"
                                                     : "netkill",
          run->job, action.reason);
    if (action.kind == SafetyAction::Kind::kFreeze) {
      run->view.frozen = true;
      ++result_.freezes;
    } else if (action.kind == SafetyAction::Kind::kThaw) {
      run->view.frozen = false;
      run->view.last_growth_ms = now_;  // its plateau while frozen proved nothing.
    } else {
      ++result_.safety_kills;
      Fail(static_cast<size_t>(run - running_.begin()), /*by_kernel=*/false);
    }
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
