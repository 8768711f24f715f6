// StatusPrinter: the console Status — NINJA_STATUS lines, job output, FAILED blocks, `-d explain`
// lines and ninja: messages exactly as ninja 1.13.2 writes them, plus headroom's memory field.
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <string>
#include <unordered_map>

#include "headroom/build/build_config.h"
#include "headroom/status/line_printer.h"
#include "headroom/status/status.h"

namespace headroom {

class Explanations;

// Where the console output goes and what the environment said; everything a test needs to replace.
struct ConsoleSetup {
  LinePrinter::Options line;  // stdout: smartness, colour, width
  FILE* err = stderr;         // explanations, warnings, errors
  std::string status_format = "[%f/%t] ";
  // Called with the message of a fatal error (an unknown placeholder). The default writes
  // "ninja: fatal: <message>" to stderr and exits 1; a replacement may throw, or return to let
  // formatting stop early.
  std::function<void(const std::string&)> fatal;

  // The real process: stdout/stderr, TERM, CLICOLOR_FORCE, NINJA_STATUS (unset = default; set but
  // empty = no prefix, as in ninja).
  static ConsoleSetup FromEnvironment();
};

class StatusPrinter : public Status {
 public:
  // `explanations` (nullable) is the scan's record for -d explain; it must outlive the printer.
  explicit StatusPrinter(const BuildConfig& config, ConsoleSetup setup = ConsoleSetup::FromEnvironment(),
                         const Explanations* explanations = nullptr);

  void set_explanations(const Explanations* explanations) { explanations_ = explanations; }

  void PlanHasTotalEdges(int total) override;
  void EdgeAddedToPlan(const Edge* edge, int64_t previous_duration_ms) override;
  void EdgeRemovedFromPlan(const Edge* edge) override;
  void BuildEdgeStarted(const Edge* edge, int64_t start_time_ms) override;
  void BuildEdgeFinished(Edge* edge, int64_t start_time_ms, int64_t end_time_ms, bool success,
                         int exit_code, const std::string& output) override;
  void BuildStarted() override;
  void BuildFinished() override;
  void UpdateMemory(const MemoryStatus& memory) override;

  void Info(const std::string& message) override;
  void Warning(const std::string& message) override;
  void Error(const std::string& message) override;

  // `format` (NINJA_STATUS syntax) expanded with the current counters and the latest edge time.
  std::string FormatProgressStatus(const std::string& format);
  // The smart-terminal memory indicator (" [mem 5.1G/12.0G, 3 waiting]"), empty when not shown.
  std::string MemoryTail() const;

  const LinePrinter& printer() const { return printer_; }

 private:
  // Edges per second over the last N finished edges (N = parallelism), as %c shows it.
  class SlidingRate {
   public:
    explicit SlidingRate(int window) : window_(window < 1 ? 1 : window) {}
    void Update(int finished_edges, int64_t time_ms);
    double rate() const { return rate_; }  // -1 until two distinct times are known
   private:
    size_t window_;
    int last_update_ = -1;
    std::deque<int64_t> times_;
    double rate_ = -1;
  };

  void PrintStatus(const Edge* edge);
  void PrintExplanations(const Edge* edge);
  void PrintFailure(const Edge* edge, int exit_code);
  void PrintJobOutput(const std::string& output);
  void RecalculateProgressPrediction();
  void ForgetPrediction(const Edge* edge, bool finished);
  bool FormatUsesMemoryPlaceholders() const;

  const BuildConfig config_;
  LinePrinter printer_;
  FILE* err_;
  FILE* out_;
  std::string status_format_;
  std::function<void(const std::string&)> fatal_;
  const Explanations* explanations_;

  // Counters behind the placeholders. BuildStarted resets the first three but not the total, so a
  // manifest rebuild's edges stay counted in %t, as in ninja.
  int started_edges_ = 0;
  int finished_edges_ = 0;
  int running_edges_ = 0;
  int total_edges_ = 0;
  int64_t time_ms_ = 0;  // the latest start or end time seen
  SlidingRate current_rate_;

  // ETA inputs: edges with a known previous duration, and the run time spent so far.
  std::unordered_map<const Edge*, int64_t> predicted_duration_ms_;
  int predictable_edges_total_ = 0;
  int predictable_edges_remaining_ = 0;
  int unpredictable_edges_remaining_ = 0;
  int64_t predictable_time_total_ms_ = 0;
  int64_t predictable_time_remaining_ms_ = 0;
  int64_t run_time_ms_ = 0;  // sum of (end - start) of finished edges
  double predicted_fraction_done_ = 0.0;

  MemoryStatus memory_;
  bool memory_known_ = false;
  std::string last_status_line_;  // the text of the status line showing, for memory refreshes
};

}  // namespace headroom
