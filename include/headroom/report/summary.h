// The end-of-build memory summary: a few "headroom: " lines after the build when headroom made a
// memory decision (or when asked), so users see what it did; silent otherwise.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "headroom/report/memory_decisions.h"
#include "headroom/report/timeline.h"

namespace headroom {

// A summary is shown when memory shaped the build, or when the user asked for detail.
bool SummaryWanted(const MemoryDecisions& decisions, bool verbose);

// Adds one pass's counters (a manifest regeneration, then the build) to the whole run's.
void AddDecisions(MemoryDecisions* total, const MemoryDecisions& pass);

// The summary's lines, without the "headroom: " prefix.
std::vector<std::string> SummaryLines(const BuildTimeline& timeline, const MemoryDecisions& decisions);

// Writes the lines to `out` (stdout), each prefixed "headroom: ".
void PrintSummary(FILE* out, const std::vector<std::string>& lines);

}  // namespace headroom
