// After the build: how it ended, the summary lines, and the trace and report files.
#include "headroom/report/build_outputs.h"

#include "headroom/report/html_report.h"
#include "headroom/report/summary.h"
#include "headroom/report/trace_writer.h"
#include "headroom/status/status.h"

namespace headroom {

namespace {

// 130 is how an interrupted build exits (see Builder::failure_exit_code).
constexpr int kInterruptedExitCode = 130;

const char* ResultOf(int exit_code) {
  if (exit_code == 0) return "succeeded";
  if (exit_code == kInterruptedExitCode) return "interrupted";
  return "failed";
}

}  // namespace

void FinishBuild(BuildTimeline* timeline, const MemoryDecisions& decisions, const BuildOutputs& outputs,
                 int exit_code, int64_t duration_ms, Status* status, FILE* out) {
  BuildFacts& facts = timeline->facts();
  facts.result = ResultOf(exit_code);
  facts.exit_code = exit_code;
  facts.duration_ms = duration_ms;
  if (decisions.budget_bytes) facts.budget_bytes = decisions.budget_bytes;

  if (SummaryWanted(decisions, outputs.verbose)) PrintSummary(out, SummaryLines(*timeline, decisions));

  std::string err;
  if (!outputs.trace_path.empty() && !WriteTrace(*timeline, outputs.trace_path, &err))
    status->Error("writing trace '" + outputs.trace_path + "': " + err);
  err.clear();
  if (!outputs.report_path.empty() && !WriteReport(*timeline, outputs.report_path, &err))
    status->Error("writing report '" + outputs.report_path + "': " + err);
}

}  // namespace headroom
