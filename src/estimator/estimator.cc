// Peak-memory and duration predictions: edge history > user hint > class history > command priors.
#include "headroom/estimator/estimator.h"

#include <algorithm>

#include <fmt/format.h>

#include "headroom/estimator/command_line.h"

namespace headroom {
namespace {

uint64_t Scale(uint64_t bytes, double factor) { return static_cast<uint64_t>(static_cast<double>(bytes) * factor); }

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
    case EstimateSource::kPrior: return "prior";
  }
  return "prior";
}

Estimator::Estimator(HistoryStore* history, FileSizeFn sizes, EstimatorConfig config)
    : history_(history), sizes_(std::move(sizes)), config_(std::move(config)) {}

uint64_t Estimator::Floor(uint64_t bytes) const { return std::max(bytes, config_.minimum_estimate); }

std::optional<Estimate> Estimator::FromEdgeHistory(const JobDescription& job, const Prior& prior) const {
  const EdgeHistory* edge = history_ ? history_->FindEdge(job.output, job.command_hash) : nullptr;
  if (!edge) return std::nullopt;
  // Only runs since the last completed one matter for kills: a completion measured the whole run.
  size_t window_start = edge->recent.size() > config_.edge_window ? edge->recent.size() - config_.edge_window : 0;
  uint64_t completed_max = 0, killed_bound = 0;
  bool rusage_only = true;
  for (size_t i = window_start; i < edge->recent.size(); ++i) {
    const HistoryRecord& r = edge->recent[i];
    if (r.killed()) {
      killed_bound = std::max(killed_bound, Scale(r.peak_bytes, config_.killed_factor));
    } else {
      completed_max = std::max(completed_max, r.peak_bytes);
      killed_bound = 0;  // this later completion supersedes the earlier kills' lower bounds.
      rusage_only = rusage_only && r.method == PeakMethod::kRusage;
    }
  }
  Estimate estimate;
  estimate.source = EstimateSource::kEdgeHistory;
  estimate.duration_ms = MedianDuration(edge->recent);
  estimate.peak_bytes = std::max(Scale(completed_max, config_.edge_margin), killed_bound);
  // A kill only bounds the peak from below: the edge is known once a run of it completed since.
  estimate.confident = completed_max > 0 && killed_bound == 0;
  estimate.why = fmt::format("edge history: max of last {} run(s) x{:.2f}", edge->recent.size() - window_start,
                             config_.edge_margin);
  if (killed_bound > 0) estimate.why += fmt::format(", killed run x{:.1f}", config_.killed_factor);
  // ru_maxrss sees one process only, so for multi-process tools it is a lower bound: never below the prior.
  if (completed_max > 0 && rusage_only && prior.peak_bytes > estimate.peak_bytes) {
    estimate.peak_bytes = prior.peak_bytes;
    estimate.why += " (ru_maxrss only: raised to the prior)";
  }
  return estimate;
}

std::optional<Estimate> Estimator::FromHint(const JobDescription& job) const {
  if (!job.mem_hint) return std::nullopt;
  std::string error;
  std::optional<uint64_t> bytes = ParseSize(*job.mem_hint, &error);
  if (!bytes) return std::nullopt;  // the manifest loader reports bad hints; here they are simply ignored.
  Estimate estimate;
  estimate.source = EstimateSource::kUserHint;
  estimate.peak_bytes = *bytes;
  estimate.why = fmt::format("headroom_mem = {}", *job.mem_hint);
  return estimate;
}

std::optional<Estimate> Estimator::FromClass(const std::string& class_key) const {
  const ClassStats* stats = history_ ? history_->FindClass(class_key) : nullptr;
  if (!stats || stats->completed() == 0) return std::nullopt;
  Estimate estimate;
  estimate.source = EstimateSource::kClassHistory;
  double margin =
      stats->completed() >= config_.class_confident_samples ? config_.class_confident_margin : config_.class_margin;
  estimate.peak_bytes = Scale(stats->PeakQuantile(config_.class_quantile), margin);
  estimate.confident = stats->completed() >= config_.class_confident_samples;
  estimate.duration_ms = stats->MeanDurationMs();
  estimate.why = fmt::format("class history: p{:.0f} of {} job(s) x{:.2f}", config_.class_quantile * 100,
                             stats->completed(), margin);
  return estimate;
}

JobProfile Estimator::Profile(const JobDescription& job) const {
  return {JobClassKey(job.rule, job.command),
          PriorFromCommand(job.command, job.rspfile_content, sizes_, config_.priors)};
}

Estimate Estimator::Predict(const JobDescription& job, const JobProfile& profile) const {
  const std::string& class_key = profile.class_key;
  const Prior& prior = profile.prior;
  std::optional<Estimate> best = FromEdgeHistory(job, prior);
  std::optional<Estimate> from_class = FromClass(class_key);
  if (!best) best = FromHint(job);
  if (!best) best = from_class;
  if (!best) {
    best.emplace();
    best->source = EstimateSource::kPrior;
    best->peak_bytes = prior.peak_bytes;
    best->why = "prior: " + prior.why;
    best->unknown_heavy = prior.peak_bytes >= config_.heavy_threshold;
  }
  // Durations come from whatever measured source exists even when the peak came from a hint.
  if (best->duration_ms == 0 && from_class) best->duration_ms = from_class->duration_ms;
  best->peak_bytes = Floor(best->peak_bytes);
  best->class_key = class_key;
  return *best;
}

bool Estimator::Learn(const JobDescription& job, const HistoryRecord& record, std::string* error,
                      const JobProfile* profile) {
  if (!history_) return true;
  ++generation_;  // the record is kept in memory even when the file write fails.
  const std::string class_key = profile ? profile->class_key : JobClassKey(job.rule, job.command);
  return history_->Record(job.output, job.command_hash, class_key, record, error);
}

}  // namespace headroom
