// Peak-memory and duration predictions: edge history > user hint > class history > family history > command
// priors; the family figures grouped from the history's classes.
#include "headroom/estimator/estimator.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>
#include <mutex>
#include <string>
#include <unordered_set>

#include <fmt/format.h>

#include "headroom/estimator/command_line.h"
#include "headroom/estimator/exec_mode.h"
#include "headroom/util/byte_size.h"
#include "headroom/util/messages.h"

namespace headroom {
namespace {

// A malformed headroom_mem is ignored, so say so, once per distinct value in this process: a rule-level hint
// repeats on every edge, and the planner predicts each edge many times.
void WarnOnceAboutBadHint(std::string_view hint, std::string_view output, const std::string& error) {
  static std::mutex mutex;
  static std::unordered_set<std::string> reported;
  std::lock_guard<std::mutex> lock(mutex);
  if (!reported.emplace(hint).second) return;
  Warning("ignoring headroom_mem = {} (first on '{}'): {}", hint, output, error);
}

int64_t MedianDuration(const RecentRuns& records) {
  std::vector<int64_t> durations;
  for (const HistoryRecord& r : records) {
    if (!r.killed()) durations.push_back(r.duration_ms);
  }
  if (durations.empty()) return 0;
  std::sort(durations.begin(), durations.end());
  return durations[durations.size() / 2];
}

}  // namespace

const char* EstimateSourceName(EstimateSource source) {
  switch (source) {
    case EstimateSource::kEdgeHistory: return "edge history";
    case EstimateSource::kUserHint: return "headroom_mem hint";
    case EstimateSource::kClassHistory: return "class history";
    case EstimateSource::kFamilyHistory: return "family history";
    case EstimateSource::kPrior: return "prior";
  }
  return "prior";
}

Estimator::Estimator(HistoryStore* history, FileSizeFn sizes, EstimatorConfig config)
    : history_(history), sizes_(std::move(sizes)), config_(std::move(config)) {}

uint64_t Estimator::Floor(uint64_t bytes) const { return std::max(bytes, config_.minimum_estimate); }

std::optional<Estimate> Estimator::FromEdgeHistory(const JobDescription& job, const JobProfile& profile,
                                                   bool why) const {
  const Prior& prior = profile.prior;
  const EdgeHistory* edge = history_ ? history_->FindEdge(job.output, job.command_hash) : nullptr;
  // The same edge measured in another build dir (a previous pip install's temp dir), from the user store.
  const bool from_store = !edge && user_store_ && (edge = user_store_->FindEdge(profile.store_key)) != nullptr;
  if (!edge) return std::nullopt;
  // Only runs since the last completed one matter for kills: a completion measured the whole run.
  size_t window_start = edge->recent.size() > config_.edge_window ? edge->recent.size() - config_.edge_window : 0;
  uint64_t completed_max = 0, killed_bound = 0;
  bool rusage_only = true;
  std::optional<RiseCurve> rise;  // the fastest rise of the completed runs (any unknown one makes it unknown)
  for (size_t i = window_start; i < edge->recent.size(); ++i) {
    const HistoryRecord& r = edge->recent[i];
    if (r.killed()) {
      killed_bound = std::max(killed_bound, ScaleBytes(r.peak_bytes, config_.killed_factor));
    } else {
      rise = rise ? RiseCurve::Faster(*rise, r.rise) : r.rise;
      completed_max = std::max(completed_max, r.peak_bytes);
      killed_bound = 0;  // this later completion supersedes the earlier kills' lower bounds.
      rusage_only = rusage_only && r.method == PeakMethod::kRusage;
    }
  }
  Estimate estimate;
  estimate.source = EstimateSource::kEdgeHistory;
  estimate.duration_ms = MedianDuration(edge->recent);
  if (rise) estimate.rise = *rise;
  const double margin = EdgeMargin(*edge, window_start);
  estimate.peak_bytes = std::max(ScaleBytes(completed_max, margin), killed_bound);
  // A kill only bounds the peak from below: the edge is known once a run of it completed since.
  estimate.confident = completed_max > 0 && killed_bound == 0;
  if (why) {
    estimate.why = fmt::format("{}edge history: max of last {} run(s) x{:.2f}", from_store ? "user store " : "",
                               edge->recent.size() - window_start, margin);
    if (killed_bound > 0) estimate.why += fmt::format(", killed run x{:.1f}", config_.killed_factor);
  }
  // ru_maxrss sees one process only, so for multi-process tools it is a lower bound: never below the prior.
  if (completed_max > 0 && rusage_only && prior.peak_bytes > estimate.peak_bytes) {
    estimate.peak_bytes = prior.peak_bytes;
    if (why) estimate.why += " (ru_maxrss only: raised to the prior)";
  }
  return estimate;
}

double Estimator::EdgeMargin(const EdgeHistory& edge, size_t window_start) const {
  // Exact peaks that repeat tell how much an edge varies; polled peaks that may miss a spike keep the full
  // margin; one exact run leaves only run-to-run variation, which compilers keep within a few percent.
  uint64_t low = UINT64_MAX, high = 0;
  size_t exact_runs = 0;
  for (size_t i = window_start; i < edge.recent.size(); ++i) {
    const HistoryRecord& r = edge.recent[i];
    if (r.killed()) continue;
    if (r.method != PeakMethod::kCgroup || r.peak_bytes == 0) return config_.edge_margin;
    low = std::min(low, r.peak_bytes);
    high = std::max(high, r.peak_bytes);
    ++exact_runs;
  }
  if (exact_runs == 0) return config_.edge_margin;
  if (exact_runs == 1) return config_.edge_exact_single_margin;
  double spread = static_cast<double>(high) / static_cast<double>(low) - 1.0;
  return std::clamp(1.0 + config_.edge_spread_factor * spread, config_.edge_margin_floor, config_.edge_margin);
}

std::optional<Estimate> Estimator::FromHint(const JobDescription& job, bool why) const {
  if (!job.mem_hint) return std::nullopt;
  std::string error;
  std::optional<uint64_t> bytes = ParseSize(*job.mem_hint, &error);
  if (!bytes) {
    WarnOnceAboutBadHint(*job.mem_hint, job.output, error);
    return std::nullopt;  // the other sources decide, as without a hint
  }
  Estimate estimate;
  estimate.source = EstimateSource::kUserHint;
  estimate.peak_bytes = *bytes;
  if (why) estimate.why = fmt::format("headroom_mem = {}", *job.mem_hint);
  return estimate;
}

std::optional<Estimate> Estimator::FromClass(std::string_view class_key, bool why) const {
  const ClassStats* stats = history_ ? history_->FindClass(class_key) : nullptr;
  if (!stats || stats->completed() == 0) return std::nullopt;
  Estimate estimate;
  estimate.source = EstimateSource::kClassHistory;
  double margin =
      stats->completed() >= config_.class_confident_samples ? config_.class_confident_margin : config_.class_margin;
  estimate.peak_bytes = ScaleBytes(stats->PeakQuantile(config_.class_quantile), margin);
  estimate.confident = stats->completed() >= config_.class_confident_samples;
  estimate.duration_ms = stats->MeanDurationMs();
  if (why) {
    estimate.why = fmt::format("class history: p{:.0f} of {} job(s) x{:.2f}", config_.class_quantile * 100,
                               stats->completed(), margin);
  }
  return estimate;
}

std::optional<Estimate> Estimator::FromFamily(std::string_view family_key, bool why) const {
  if (!history_) return std::nullopt;
  IndexFamilies();
  auto it = family_index_.find(family_key);
  if (it == family_index_.end()) return std::nullopt;
  const FamilyStats& family = families_[it->second];
  if (family.completed == 0) return std::nullopt;
  Estimate estimate;
  estimate.source = EstimateSource::kFamilyHistory;
  // The margin shrinks as members accumulate: the family's high quantile is then measured, not guessed.
  double margin =
      config_.family_margin_base + config_.family_margin_spread / std::sqrt(static_cast<double>(family.completed));
  estimate.peak_bytes = ScaleBytes(family.high_peak, margin);
  estimate.duration_ms = family.mean_duration_ms;
  if (why) {
    estimate.why = fmt::format("family history: p{:.0f} of {} job(s) in {} class(es) x{:.2f}",
                               config_.class_quantile * 100, family.completed, family.classes, margin);
  }
  return estimate;
}

void Estimator::IndexFamilies() const {
  families_indexed_ = true;
  // Classes are only ever appended to the history, so grouping picks up where it stopped.
  const std::vector<ClassStats>& classes = history_->classes();
  for (; classes_indexed_ < classes.size(); ++classes_indexed_) NoteClass(static_cast<uint32_t>(classes_indexed_));
}

void Estimator::NoteClass(uint32_t class_id) const {
  const ClassStats& stats = history_->ClassById(class_id);
  std::string key = FamilyKeyOfClassKey(stats.key());
  auto [it, inserted] = family_index_.try_emplace(key, families_.size());
  if (inserted) {
    families_.push_back(FamilyStats{std::move(key)});
    family_members_.emplace_back();
  }
  family_members_[it->second].push_back(class_id);
  Refresh(families_[it->second]);
}

void Estimator::Refresh(FamilyStats& family) const {
  const std::vector<uint32_t>& members = family_members_[&family - families_.data()];
  family.completed = 0;
  family.classes = 0;
  family.high_peak = family.max_peak = 0;
  double duration_total = 0;
  for (uint32_t id : members) {
    const ClassStats& stats = history_->ClassById(id);
    if (stats.completed() == 0) continue;
    ++family.classes;
    family.completed += stats.completed();
    family.high_peak = std::max(family.high_peak, stats.PeakQuantile(config_.class_quantile));
    family.max_peak = std::max(family.max_peak, stats.max_peak());
    duration_total += static_cast<double>(stats.MeanDurationMs()) * static_cast<double>(stats.completed());
  }
  family.mean_duration_ms =
      family.completed ? static_cast<int64_t>(duration_total / static_cast<double>(family.completed)) : 0;
}

std::vector<FamilyStats> Estimator::Families() const {
  if (!history_) return {};
  IndexFamilies();
  std::vector<FamilyStats> families = families_;
  std::sort(families.begin(), families.end(), [](const FamilyStats& a, const FamilyStats& b) {
    return a.high_peak != b.high_peak ? a.high_peak > b.high_peak : a.key < b.key;
  });
  return families;
}

std::string_view KeyPool::Intern(std::string_view key) {
  auto found = keys_.find(key);
  if (found == keys_.end()) found = keys_.emplace(key).first;
  return *found;
}

JobProfile Estimator::Profile(const JobDescription& job) const {
  Prior prior = PriorFromCommand(job.command, job.rspfile_content, sizes_, config_.priors);
  std::string class_key = JobClassKey(job.rule, job.command);
  if (prior.runs_in_compile_server) class_key = CompileServerKey(class_key);
  const uint64_t store_key = user_store_ ? user_store_->EdgeKey(job.output, class_key) : 0;
  // The family keeps the suffix word as it is, as IndexFamilies derives it from the history's class keys.
  return {keys_.Intern(class_key), keys_.Intern(FamilyKeyOfClassKey(class_key)), std::move(prior), store_key};
}

// A job that compiles in sccache's server measured only the client (a few MiB): its history says how long it
// takes, never how much memory the compile needs. Its command's prior sizes it, as on a first build.
void Estimator::SizeCompileServerJob(const Prior& prior, bool why, Estimate* estimate) const {
  if (estimate->source == EstimateSource::kPrior || estimate->source == EstimateSource::kUserHint) return;
  const uint64_t measured = estimate->peak_bytes;
  estimate->source = EstimateSource::kPrior;
  estimate->peak_bytes = std::max(prior.peak_bytes, measured);
  estimate->confident = false;
  estimate->unknown_heavy = false;  // its first run was the probe: another one would not measure more
  estimate->rise = RiseCurve();     // the client's curve, not the compile's
  if (why) {
    estimate->why = fmt::format("prior: {} (compiled in sccache's server, outside the job: its own processes, the "
                                "client, measured {})", prior.why, FormatBytes(measured));
  }
}

Estimate Estimator::Predict(const JobDescription& job, const JobProfile& profile, EstimateDetail detail) const {
  if (user_store_) user_store_->EnsureLoaded();  // seeds its classes into the history before any lookup
  const bool why = detail == EstimateDetail::kWithWhy;
  const std::string_view class_key = profile.class_key;
  const Prior& prior = profile.prior;
  std::optional<Estimate> best = FromEdgeHistory(job, profile, why);
  std::optional<Estimate> from_class = FromClass(class_key, why);
  if (!best) best = FromHint(job, why);
  if (!best) best = from_class;
  // The family stands in for a class with no data yet; its duration also stands in for a missing one.
  std::optional<Estimate> from_family;
  if (!best || (best->duration_ms == 0 && !from_class)) from_family = FromFamily(profile.family_key, why);
  if (!best) best = from_family;
  if (!best) {
    best.emplace();
    best->source = EstimateSource::kPrior;
    best->peak_bytes = prior.peak_bytes;
    if (why) best->why = "prior: " + prior.why;
    best->unknown_heavy = prior.peak_bytes >= config_.heavy_threshold;
  }
  if (prior.runs_in_compile_server) SizeCompileServerJob(prior, why, &*best);
  // Durations come from whatever measured source exists even when the peak came from a hint.
  if (best->duration_ms == 0 && from_class) best->duration_ms = from_class->duration_ms;
  if (best->duration_ms == 0 && from_family) best->duration_ms = from_family->duration_ms;
  best->peak_bytes = Floor(best->peak_bytes);
  best->class_key = class_key;
  best->family_key = profile.family_key;
  return *best;
}

bool Estimator::Learn(const JobDescription& job, const HistoryRecord& record, std::string* error,
                      const JobProfile* profile) {
  if (!history_) return true;
  ++generation_;  // the record is kept in memory even when the file write fails.
  std::optional<JobProfile> parsed;  // only without a kept profile: keyed exactly as Profile keys it
  if (!profile) profile = &parsed.emplace(Profile(job));
  const std::string_view class_key = profile->class_key;
  bool written = history_->Record(job.output, job.command_hash, class_key, record, error);
  if (user_store_) user_store_->Record(job.output, class_key, record, static_cast<int64_t>(time(nullptr)));
  if (families_indexed_) {
    // A new class joins its family here; a known one changed its figures, so its family is redone.
    size_t known = classes_indexed_;
    IndexFamilies();
    const ClassStats* stats = history_->FindClass(class_key);
    if (stats && static_cast<size_t>(stats - history_->classes().data()) < known)
      Refresh(families_[family_index_.find(profile->family_key)->second]);
  }
  return written;
}

}  // namespace headroom
