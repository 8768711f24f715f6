// MemoryController's records in the build timeline (report/timeline.h): jobs, memory samples and markers, for the
// summary, the trace and the report. Each does nothing without a timeline.
#include "headroom/admission/memory_controller.h"
#include "headroom/graph/graph.h"
#include "headroom/report/timeline.h"

namespace headroom {

void MemoryController::RecordJobStart(Running* running, const Edge* edge, const EdgeState& state, int64_t now) {
  if (!timeline_) return;
  TimelineJob job;
  job.output = OutputOf(edge);
  if (timeline_->keeps_details()) {  // the summary alone reads none of these
    job.command = edge->EvaluateCommand();  // evaluated again rather than kept per waiting edge
    job.rule = edge->rule->name();
    job.class_key = core_.TraitsOf(edge->id).class_key;
  }
  job.start_ms = timeline_->Elapsed(now);
  job.estimate_bytes = core_.EstimateOf(edge->id).peak_bytes;
  job.estimate_source = EstimateSourceName(core_.EstimateOf(edge->id).source);
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
  sample.budget_bytes = core_.budget_bytes();
  // The budget is held against what the build's jobs use (see AdmissionPolicy::Headroom), so that
  // is the "used" the report draws under the budget line.
  for (const auto& [id, running] : running_) {
    sample.used_bytes += running.job->rss;
    sample.reserved_bytes += core_.policy().Owed(*running.job, now);
    sample.jobs.push_back(JobUsage{running.timeline_job, running.job->rss});
  }
  sample.pressure_pct = reading.pressure_some_pct;
  sample.running = static_cast<int>(running_.size());
  sample.waiting = core_.waiting_now();
  timeline_->Sample(sample);
}

void MemoryController::RecordMarker(const char* kind, const std::string& output, const std::string& detail,
                                    int64_t now) {
  if (!timeline_) return;
  timeline_->Mark(TimelineMarker{timeline_->Elapsed(now), kind, output, detail});
}

}  // namespace headroom
