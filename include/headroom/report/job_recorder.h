// JobRecorder: the builder's JobController with --no-memory when a trace or report was asked for.
// It decides nothing; it only records each job's start and end in the BuildTimeline.
#pragma once

#include <map>

#include "headroom/build/builder.h"
#include "headroom/report/timeline.h"

namespace headroom {

class Clock;

class JobRecorder : public JobController {
 public:
  JobRecorder(BuildTimeline* timeline, const Clock* clock) : timeline_(timeline), clock_(clock) {}

  void JobStarted(Edge* edge, JobId id, ProcessRunner* runner) override;
  bool JobFinished(Edge* edge, JobExit* exit) override;
  void BuildEnded() override;

 private:
  BuildTimeline* timeline_;
  const Clock* clock_;
  std::map<JobId, size_t> running_;  // runner id -> timeline job
};

}  // namespace headroom
