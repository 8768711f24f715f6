// DecisionLog (--mem-log=FILE): the memory decisions of one build as a text file a user can attach to a bug
// report. It subscribes to the build's timeline (TimelineListener), so it logs what the controllers record there.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "headroom/report/memory_decisions.h"
#include "headroom/report/timeline.h"

namespace spdlog {
class logger;
}

namespace headroom {

// One line per admission (with the job's expected peak and where that figure came from), wait (and why), freeze,
// thaw, kill, OOM kill, requeue, job end (with its measured peak) and, at most once a second, the budget reading
// it was decided on. Each line is flushed as it is written: a build that is killed leaves its log behind.
class DecisionLog : public TimelineListener {
 public:
  // How far apart the budget readings logged are, in build time.
  static constexpr int64_t kSampleIntervalMs = 1000;

  // Opens `path` for writing (replacing an earlier log); null with *error set when it cannot.
  static std::unique_ptr<DecisionLog> Open(const std::string& path, std::string* error);
  ~DecisionLog() override;

  void BuildStarted(const BuildFacts& facts);
  // The build's totals, as the end-of-build summary counts them.
  void BuildEnded(const BuildFacts& facts, const MemoryDecisions& decisions, int exit_code);

  void JobStarted(const TimelineJob& job) override;
  void JobFinished(const TimelineJob& job) override;
  void Sample(const MemorySample& sample) override;
  void Mark(const TimelineMarker& marker) override;

 private:
  explicit DecisionLog(std::shared_ptr<spdlog::logger> logger);

  std::shared_ptr<spdlog::logger> logger_;
  int64_t last_sample_ms_ = -1;
};

}  // namespace headroom
