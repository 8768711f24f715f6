// BuildTimeline bookkeeping: jobs get the lowest free drawing lane, samples and markers are appended.
#include "headroom/report/timeline.h"

namespace headroom {

size_t BuildTimeline::JobStarted(TimelineJob job) {
  int lane = -1;
  for (size_t i = 0; i < slot_free_at_.size(); ++i) {
    if (slot_free_at_[i] >= 0 && slot_free_at_[i] <= job.start_ms) {
      lane = static_cast<int>(i);
      break;
    }
  }
  if (lane < 0) {
    lane = static_cast<int>(slot_free_at_.size());
    slot_free_at_.push_back(-1);
  }
  slot_free_at_[lane] = -1;
  job.slot = lane;
  if (!keep_details_) {  // the summary needs none of these; a 10k-job build would hold them all.
    job.command = std::string();
    job.rule = std::string();
    job.class_key = std::string();
  }
  jobs_.push_back(std::move(job));
  return jobs_.size() - 1;
}

void BuildTimeline::JobFinished(size_t index, int64_t end_ms, uint64_t peak_bytes, const std::string& peak_method,
                                const std::string& outcome, int exit_code) {
  TimelineJob& job = jobs_[index];
  job.end_ms = end_ms;
  job.peak_bytes = peak_bytes;
  job.peak_method = peak_method;
  job.outcome = outcome;
  job.exit_code = exit_code;
  slot_free_at_[job.slot] = end_ms;
}

void BuildTimeline::Sample(const MemorySample& sample) {
  samples_.push_back(sample);
  if (!keep_details_) samples_.back().jobs = std::vector<JobUsage>();
}

void BuildTimeline::Mark(TimelineMarker marker) { markers_.push_back(std::move(marker)); }

}  // namespace headroom
