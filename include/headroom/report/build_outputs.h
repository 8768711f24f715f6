// What headroom leaves behind after a build, failed or interrupted ones included: the end-of-build
// summary on stdout and the --trace / --report files.
#pragma once

#include <cstdio>
#include <string>

#include "headroom/report/memory_decisions.h"
#include "headroom/report/timeline.h"

namespace headroom {

class Status;

struct BuildOutputs {
  std::string trace_path;   // --trace=FILE; empty: none
  std::string report_path;  // --report=FILE.html; empty: none
  bool verbose = false;     // the user asked for detail: show the summary even when memory never mattered
  bool wanted() const { return !trace_path.empty() || !report_path.empty(); }
};

// Records how the build ended in the timeline's facts ("succeeded"/"failed"/"interrupted" from the
// exit code), prints the summary when SummaryWanted, and writes the files. A file that cannot be
// written is reported through status->Error; the build's exit code is not changed by it.
void FinishBuild(BuildTimeline* timeline, const MemoryDecisions& decisions, const BuildOutputs& outputs,
                 int exit_code, int64_t duration_ms, Status* status, FILE* out);

}  // namespace headroom
