// BuildTimeline bookkeeping: jobs get the lowest free drawing lane, samples and markers are appended;
// without details only what the summary reads is kept (the peak sample, the heaviest jobs, no markers); a
// listener is told of everything.
#include "headroom/report/timeline.h"

#include <algorithm>

namespace headroom {

int BuildTimeline::AssignLane(int64_t start_ms) {
  for (size_t i = 0; i < slot_free_at_.size(); ++i) {
    if (slot_free_at_[i] >= 0 && slot_free_at_[i] <= start_ms) {
      slot_free_at_[i] = -1;
      return static_cast<int>(i);
    }
  }
  slot_free_at_.push_back(-1);
  return static_cast<int>(slot_free_at_.size() - 1);
}

size_t BuildTimeline::JobStarted(TimelineJob job) {
  job.slot = AssignLane(job.start_ms);
  if (listener_) listener_->JobStarted(job);
  if (keep_details_) {
    jobs_.push_back(std::move(job));
    return jobs_.size() - 1;
  }
  // The summary needs none of these; a 10k-job build would hold them all until it ends.
  job.command = std::string();
  job.rule = std::string();
  job.class_key = std::string();
  const size_t handle = started_++;
  running_.emplace(handle, std::move(job));
  return handle;
}

void BuildTimeline::JobFinished(size_t handle, int64_t end_ms, uint64_t peak_bytes, const std::string& peak_method,
                                const std::string& outcome, int exit_code) {
  TimelineJob* job = nullptr;
  auto running = running_.end();
  if (keep_details_) {
    job = &jobs_[handle];
  } else {
    running = running_.find(handle);
    if (running == running_.end()) return;
    job = &running->second;
  }
  job->end_ms = end_ms;
  job->peak_bytes = peak_bytes;
  job->peak_method = peak_method;
  job->outcome = outcome;
  job->exit_code = exit_code;
  slot_free_at_[job->slot] = end_ms;
  if (listener_) listener_->JobFinished(*job);
  if (running == running_.end()) return;
  // The summary lists only measured jobs, heaviest first.
  if (peak_bytes > 0) KeepIfAmongHeaviest(handle, std::move(running->second));
  running_.erase(running);
}

// Keeps the kHeaviestKeptWithoutDetails heaviest jobs, earlier starts first among equal peaks, in start
// order: the order the full list would have had.
void BuildTimeline::KeepIfAmongHeaviest(size_t sequence, TimelineJob job) {
  if (jobs_.size() >= kHeaviestKeptWithoutDetails) {
    size_t lightest = 0;
    for (size_t i = 1; i < jobs_.size(); ++i) {
      if (jobs_[i].peak_bytes <= jobs_[lightest].peak_bytes) lightest = i;  // later start loses ties
    }
    const bool heavier = job.peak_bytes > jobs_[lightest].peak_bytes ||
                         (job.peak_bytes == jobs_[lightest].peak_bytes && sequence < kept_sequence_[lightest]);
    if (!heavier) return;
    jobs_.erase(jobs_.begin() + static_cast<std::ptrdiff_t>(lightest));
    kept_sequence_.erase(kept_sequence_.begin() + static_cast<std::ptrdiff_t>(lightest));
  }
  const auto at = std::lower_bound(kept_sequence_.begin(), kept_sequence_.end(), sequence);
  const std::ptrdiff_t position = at - kept_sequence_.begin();
  kept_sequence_.insert(at, sequence);
  jobs_.insert(jobs_.begin() + position, std::move(job));
}

void BuildTimeline::Sample(const MemorySample& sample) {
  if (listener_) listener_->Sample(sample);
  if (keep_details_) {
    samples_.push_back(sample);
    return;
  }
  // The summary reads only the build's peak: keep the first sample that reached it.
  if (!samples_.empty() && sample.used_bytes <= samples_.front().used_bytes) return;
  samples_.assign(1, sample);
  samples_.front().jobs = std::vector<JobUsage>();
}

// Markers are drawn in the trace and report only; a build where thousands of jobs wait would otherwise keep
// one per wait.
void BuildTimeline::Mark(TimelineMarker marker) {
  if (listener_) listener_->Mark(marker);
  if (keep_details_) markers_.push_back(std::move(marker));
}

}  // namespace headroom
