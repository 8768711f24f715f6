// What the builder tells the user: status lines, job output, failures, explanations, info/warnings.
// The console implementation (status_printer.h) reproduces ninja 1.13.2's output byte for byte.
#pragma once

#include <cstdint>
#include <string>

namespace headroom {

struct Edge;

// A snapshot of memory for the status line and summary; all byte counts, 0 = unknown.
struct MemoryStatus {
  uint64_t used_bytes = 0;
  uint64_t budget_bytes = 0;
  int jobs_waiting_for_memory = 0;
  // A compile farm's pool (docs/scale-out.md), once the build has a job for it: jobs on it now, its slots.
  int remote_running = 0;
  int remote_slots = 0;  // 0: no farm, or none of the build's jobs can use it
};

class Status {
 public:
  virtual ~Status() = default;
  // Sets %t outright. Builders that report edges one by one (below) need not call it.
  virtual void PlanHasTotalEdges(int total) = 0;
  // One non-phony edge joined / left the plan (%t grows / shrinks, e.g. on restat). previous_duration_ms
  // is end-start of the edge's first output in .ninja_log, -1 when unknown; it feeds %E %W %P.
  virtual void EdgeAddedToPlan(const Edge* edge, int64_t previous_duration_ms) {}
  virtual void EdgeRemovedFromPlan(const Edge* edge) {}
  // Times below are milliseconds since the build started (the values .ninja_log records).
  virtual void BuildEdgeStarted(const Edge* edge, int64_t start_time_ms) = 0;
  // exit_code follows JobExit::ExitStatusCode(); success means the edge succeeded.
  virtual void BuildEdgeFinished(Edge* edge, int64_t start_time_ms, int64_t end_time_ms, bool success,
                                 int exit_code, const std::string& output) = 0;
  virtual void BuildStarted() = 0;
  virtual void BuildFinished() = 0;
  virtual void UpdateMemory(const MemoryStatus& memory) {}

  virtual void Info(const std::string& message) = 0;     // "ninja: message" on stdout
  virtual void Warning(const std::string& message) = 0;  // "ninja: warning: message" on stderr
  virtual void Error(const std::string& message) = 0;    // "ninja: error: message" on stderr
};

}  // namespace headroom
