// --report=FILE.html: one self-contained HTML page about the build (inline CSS, SVG and a few lines
// of JS for tooltips; nothing fetched): facts, memory over time, jobs by lane, decisions, the
// heaviest and slowest jobs, and how good the memory estimates were.
#pragma once

#include <string>

#include "headroom/report/timeline.h"

namespace headroom {

std::string ReportHtml(const BuildTimeline& timeline);

// Writes the report to `path`. false with *err (the system's reason) when it could not.
bool WriteReport(const BuildTimeline& timeline, const std::string& path, std::string* err);

}  // namespace headroom
