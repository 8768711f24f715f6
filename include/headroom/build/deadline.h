// --deadline: which ready jobs may still start (their predicted duration ends before the deadline), which
// running jobs may finish in the grace after it, and when the builder stops (docs/deadline.md).
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "headroom/graph/graph.h"
#include "headroom/plan/critical_path.h"

namespace headroom {

// A deadline stops the build with this exit status (EX_TEMPFAIL: "try again later"), distinct from ninja's
// 1 (failure) and 130 (interrupt); the next run resumes.
inline constexpr int kDeadlineExitCode = 75;

class Deadline {
 public:
  // A job's predicted duration in ms (history, the estimator's class figures, the log's last run); negative
  // when nothing is known.
  using PredictFn = std::function<int64_t(const Edge*)>;

  // `at_ms` is the deadline on the builder's clock; `grace_ms` how long past it a running job predicted
  // to end in that time may still finish.
  Deadline(int64_t at_ms, int64_t grace_ms, PredictFn predict);

  // The grace for a deadline `budget_ms` after the start: 1 % of it, at least 1 s and at most 60 s.
  static int64_t DefaultGraceMs(int64_t budget_ms);

  // Whether `edge` may start at `now_ms`: it is predicted to end by the deadline. A job nothing is known
  // about counts as long as the mean of the jobs finished so far in this build (0 before the first).
  bool MayStart(const Edge* edge, int64_t now_ms);
  // Whether `edge` and the longest chain of work that waits for it (up to the build's targets) are predicted
  // to end by the deadline: as the deadline nears such edges go first, so finished work completes targets.
  bool ChainFits(const Edge* edge, int64_t now_ms);
  // The plan's edge costs for a build whose `wanted` command edges are predicted (at `parallelism` jobs at once)
  // not to end by the deadline: each target (a wanted edge no other wanted command edge consumes) gets a bonus
  // its inputs inherit on the critical path, the smallest target the largest, so targets complete one after
  // another and what is done at the deadline is usable. A build predicted to fit keeps `base` as it is.
  std::function<EdgeWeight(const Edge*)> TargetsFirst(const std::vector<const Edge*>& wanted,
                                                      std::function<EdgeWeight(const Edge*)> base, int parallelism,
                                                      int64_t now_ms);
  // Whether a ready edge was refused for the deadline: with nothing running, the build stops then.
  bool refused_any() const { return refused_any_; }

  bool Reached(int64_t now_ms) const { return now_ms >= at_ms_; }
  // Whether a job of `edge` started at `start_ms` is predicted to end within the grace.
  bool MayFinishInGrace(const Edge* edge, int64_t start_ms);
  bool GraceOver(int64_t now_ms) const { return now_ms >= at_ms_ + grace_ms_; }
  // How long the builder may wait before it must look again: until the deadline, then until the grace ends.
  int64_t MsUntilNextCheck(int64_t now_ms) const;

  // A job ended after `duration_ms`: its time stands in for jobs with no prediction.
  void JobFinished(int64_t duration_ms);

  int64_t at_ms() const { return at_ms_; }
  int64_t grace_ms() const { return grace_ms_; }

 private:
  int64_t PredictedMs(const Edge* edge);
  int64_t ChainMs(const Edge* edge);

  int64_t at_ms_;
  int64_t grace_ms_;
  PredictFn predict_;
  std::unordered_map<const Edge*, int64_t> predicted_;  // -1: unknown
  std::unordered_map<const Edge*, int64_t> chain_;
  int64_t finished_total_ms_ = 0;
  int64_t finished_jobs_ = 0;
  bool refused_any_ = false;
};

}  // namespace headroom
