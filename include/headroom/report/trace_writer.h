// --trace=FILE: the BuildTimeline as Chrome trace-event JSON, which Perfetto (ui.perfetto.dev) and
// chrome://tracing open: one track per lane of jobs, memory counters, and decision markers.
#pragma once

#include <string>

#include "headroom/report/timeline.h"

namespace headroom {

// The trace as JSON text.
std::string TraceJson(const BuildTimeline& timeline);

// Writes the trace to `path`. false with *err (the system's reason) when it could not.
bool WriteTrace(const BuildTimeline& timeline, const std::string& path, std::string* err);

}  // namespace headroom
