// BuildTimeline: what happened during a build, job by job and moment by moment, kept in memory for
// the end-of-build summary, the Chrome trace (--trace) and the HTML report (--report).
// Fed by the memory controller (or by a plain recorder with --no-memory); read by the writers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace headroom {

struct TimelineJob {
  std::string output;            // first output path
  std::string command;
  std::string rule;
  std::string class_key;
  int64_t start_ms = 0;          // ms since the build started
  int64_t end_ms = -1;           // -1 while running
  uint64_t estimate_bytes = 0;   // predicted peak when it was admitted (0: unknown / memory off)
  std::string estimate_source;   // "edge history", "class history", "prior", "hint"
  uint64_t peak_bytes = 0;       // measured peak of the whole process tree (0: not measured)
  std::string peak_method;       // "cgroup", "sampled", "rusage"
  std::string outcome;           // "ok", "failed", "oom-killed", "safety-killed" (requeued ones too)
  int exit_code = 0;
  int64_t waited_ms = 0;         // time it spent ready but held back for memory
  int slot = -1;                 // concurrency lane for drawing (assigned by the recorder)
};

struct MemorySample {
  int64_t t_ms = 0;
  uint64_t used_bytes = 0;       // in use by everything under the budget
  uint64_t budget_bytes = 0;
  uint64_t reserved_bytes = 0;   // what running jobs are still expected to grow
  double pressure_pct = 0.0;     // PSI some, short window
  int running = 0;
  int waiting = 0;               // ready jobs held back for memory
};

struct TimelineMarker {
  int64_t t_ms = 0;
  std::string kind;              // "wait", "freeze", "thaw", "kill", "requeue", "oom", "over-budget"
  std::string output;            // the job it concerns
  std::string detail;            // human-readable reason
};

class BuildTimeline {
 public:
  // Returns the job's index, used for JobFinished.
  size_t JobStarted(TimelineJob job);
  void JobFinished(size_t index, int64_t end_ms, uint64_t peak_bytes, const std::string& peak_method,
                   const std::string& outcome, int exit_code);
  void Sample(const MemorySample& sample);
  void Mark(TimelineMarker marker);

  const std::vector<TimelineJob>& jobs() const { return jobs_; }
  const std::vector<MemorySample>& samples() const { return samples_; }
  const std::vector<TimelineMarker>& markers() const { return markers_; }

 private:
  std::vector<TimelineJob> jobs_;
  std::vector<MemorySample> samples_;
  std::vector<TimelineMarker> markers_;
  std::vector<int64_t> slot_free_at_;  // per lane: when its last job ended (-1 = busy)
};

}  // namespace headroom
