// BuildTimeline: what happened during a build, job by job and moment by moment, kept in memory for
// the end-of-build summary, the Chrome trace (--trace) and the HTML report (--report).
// Fed by the memory controller (or by a plain recorder with --no-memory); read by the writers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
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
  std::string estimate_source;   // EstimateSourceName: "edge history", "class history", "prior", "headroom_mem hint"
  uint64_t peak_bytes = 0;       // measured peak of the whole process tree (0: not measured)
  std::string peak_method;       // "cgroup", "sampled", "rusage"
  std::string outcome;           // "ok", "failed", "oom-killed", "safety-killed" (requeued ones too),
                                 // "interrupted" (still running when the build stopped)
  int exit_code = 0;
  int64_t waited_ms = 0;         // time it spent ready but held back for memory
  std::string exec_mode;         // with a compile farm (docs/scale-out.md): "remote (distcc)", "fell back
                                 // (distcc)" or "local"; empty without one
  int slot = -1;                 // concurrency lane for drawing (assigned by the recorder)
};

// One running job's memory at a sample.
struct JobUsage {
  size_t job = 0;                // index into BuildTimeline::jobs()
  uint64_t bytes = 0;            // the job's process tree at that moment
};

struct MemorySample {
  int64_t t_ms = 0;
  uint64_t used_bytes = 0;       // in use by everything under the budget: the build's running jobs
  uint64_t machine_used_bytes = 0;  // in use on the machine (or cgroup), the build included
  uint64_t budget_bytes = 0;
  uint64_t reserved_bytes = 0;   // what running jobs are still expected to grow
  double pressure_pct = 0.0;     // PSI some, short window
  int running = 0;
  int waiting = 0;               // ready jobs held back for memory
  std::vector<JobUsage> jobs;    // the running jobs' shares of used_bytes (for the stacked chart)
};

struct TimelineMarker {
  int64_t t_ms = 0;
  std::string kind;              // "wait", "freeze", "thaw", "kill", "requeue", "oom", "over-budget",
                                 // "gave-up" (out of memory once too often: it failed),
                                 // "remote-fallback" (a remote-eligible job ran here: docs/scale-out.md)
  std::string output;            // the job it concerns
  std::string detail;            // human-readable reason
};

// What the report's header says about the build as a whole; filled by whoever runs the build.
struct BuildFacts {
  std::vector<std::string> targets;  // as given on the command line; empty = the manifest's defaults
  std::string working_dir;
  int64_t started_unix_s = 0;        // wall-clock start, for the report's date line
  int64_t duration_ms = 0;
  int parallelism = 0;               // -j
  bool memory_enabled = true;        // false with --no-memory (no estimates, peaks or samples)
  uint64_t budget_bytes = 0;
  uint64_t reserve_bytes = 0;
  std::string result;                // "succeeded", "failed", "interrupted", "" before it ended
  int exit_code = 0;
};

// Told of each event as it is recorded, whatever the timeline keeps: the memory-decision log (--mem-log,
// decision_log.h) subscribes here, so the controllers that feed the timeline feed it too.
class TimelineListener {
 public:
  virtual ~TimelineListener() = default;
  virtual void JobStarted(const TimelineJob& job) = 0;
  virtual void JobFinished(const TimelineJob& job) = 0;  // with its end, peak and outcome filled in
  virtual void Sample(const MemorySample& sample) = 0;
  virtual void Mark(const TimelineMarker& marker) = 0;
};

class BuildTimeline {
 public:
  // Without details, the finished jobs kept are the heaviest this many (the summary names the top 3).
  static constexpr size_t kHeaviestKeptWithoutDetails = 16;

  // Recorders take times from the build's Clock; the timeline counts from `origin_ms` on it.
  void set_origin_ms(int64_t origin_ms) { origin_ms_ = origin_ms; }
  // Without a trace or report to write, only the summary reads the timeline: the build's peak sample and
  // its heaviest measured jobs. Set before the first job: the timeline then keeps only those (no
  // commands, rules or class keys, no per-job sample shares, no markers), so its size no longer grows
  // with every job, tick and wait of a long build.
  void set_keep_details(bool keep) { keep_details_ = keep; }
  bool keeps_details() const { return keep_details_; }
  // Null (the default) tells no one; the listener must outlive the build.
  void set_listener(TimelineListener* listener) { listener_ = listener; }
  int64_t Elapsed(int64_t clock_ms) const { return clock_ms - origin_ms_; }

  // Returns the job's handle, used for JobFinished. Its lane is the lowest one free at its start.
  // With details the handle is the job's index in jobs() (and what MemorySample::jobs refer to).
  size_t JobStarted(TimelineJob job);
  void JobFinished(size_t handle, int64_t end_ms, uint64_t peak_bytes, const std::string& peak_method,
                   const std::string& outcome, int exit_code);
  // Where a finished job ran (TimelineJob::exec_mode); kept with details only (the summary counts modes itself).
  void SetExecMode(size_t handle, std::string exec_mode) {
    if (keep_details_ && handle < jobs_.size()) jobs_[handle].exec_mode = std::move(exec_mode);
  }
  void Sample(const MemorySample& sample);
  void Mark(TimelineMarker marker);

  // With details: every job, in start order. Without: the heaviest finished jobs with a measured
  // peak (at most kHeaviestKeptWithoutDetails), in start order.
  const std::deque<TimelineJob>& jobs() const { return jobs_; }
  // With details: every sample. Without: the one with the most memory in use (the first of equals).
  const std::vector<MemorySample>& samples() const { return samples_; }
  // With details: every marker. Without: none (only the trace and report draw them).
  const std::vector<TimelineMarker>& markers() const { return markers_; }
  BuildFacts& facts() { return facts_; }
  const BuildFacts& facts() const { return facts_; }

 private:
  int AssignLane(int64_t start_ms);
  void KeepIfAmongHeaviest(size_t sequence, TimelineJob job);

  int64_t origin_ms_ = 0;
  bool keep_details_ = true;
  TimelineListener* listener_ = nullptr;
  BuildFacts facts_;
  std::deque<TimelineJob> jobs_;  // a deque: no doubling slack (a vector of 10k jobs held 16k slots)
  std::vector<MemorySample> samples_;
  std::vector<TimelineMarker> markers_;
  std::vector<int64_t> slot_free_at_;  // per lane: when its last job ended (-1 = busy)
  // Without details: jobs still running, by handle (handles count jobs started), and the start
  // sequence of each job kept in jobs_ (parallel to it).
  size_t started_ = 0;
  std::map<size_t, TimelineJob> running_;
  std::deque<size_t> kept_sequence_;
};

}  // namespace headroom
