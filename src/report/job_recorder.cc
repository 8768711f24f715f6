// JobRecorder: records job starts and ends (no memory figures) so --trace/--report work with --no-memory.
#include "headroom/report/job_recorder.h"

#include "headroom/graph/graph.h"
#include "headroom/util/clock.h"

namespace headroom {

void JobRecorder::JobStarted(Edge* edge, JobId id, ProcessRunner* runner) {
  TimelineJob job;
  job.output = edge->outputs.empty() ? std::string() : edge->outputs[0]->path;
  job.command = edge->EvaluateCommand();
  job.rule = edge->rule->name();
  job.start_ms = timeline_->Elapsed(clock_->NowMs());
  running_[id] = timeline_->JobStarted(std::move(job));
}

bool JobRecorder::JobFinished(Edge* edge, JobExit* exit) {
  auto it = running_.find(exit->id);
  if (it == running_.end()) return false;
  timeline_->JobFinished(it->second, timeline_->Elapsed(clock_->NowMs()), 0, "", exit->success() ? "ok" : "failed",
                         exit->ExitStatusCode());
  running_.erase(it);
  return false;
}

void JobRecorder::BuildEnded() {
  // Jobs still running when the build ends were stopped with it.
  const int64_t now = timeline_->Elapsed(clock_->NowMs());
  for (const auto& [id, index] : running_) timeline_->JobFinished(index, now, 0, "", "interrupted", -1);
  running_.clear();
}

}  // namespace headroom
