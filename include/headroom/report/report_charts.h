// The HTML report's charts as inline SVG: memory over time (stacked by job, budget, reserve),
// jobs by lane (Gantt), the decisions strip and estimate-vs-measured scatter. Each is bounded in
// element count, so a 5,000-job build draws as quickly as a 10-job one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "headroom/report/timeline.h"

namespace headroom {

struct Chart {
  std::string svg;     // empty: nothing to draw (the report says why instead)
  std::string legend;  // HTML legend items for the chart
  int elements = 0;    // SVG elements drawn
};

inline constexpr int kMaxMemoryPoints = 360;   // samples per series after peak-preserving decimation
inline constexpr int kMemoryJobLayers = 10;    // heaviest jobs drawn on their own; the rest as one layer
inline constexpr int kMaxScatterPoints = 1500; // the heaviest jobs, when there are more
inline constexpr double kMinBarPx = 3.0;       // narrower jobs are merged per lane into small clusters

// The width of the time axis: the build's end (duration, last job end or last sample).
int64_t ReportSpanMs(const BuildTimeline& timeline);

// Colours shared by the charts, legends and tables.
const char* OutcomeColor(std::string_view outcome);
const char* MarkerColor(std::string_view kind);
// A long path shortened from the left ("…/obj/foo.o") to at most `max_chars`.
std::string ShortName(std::string_view path, size_t max_chars);

Chart MemoryChart(const BuildTimeline& timeline, int64_t span_ms);
Chart GanttChart(const BuildTimeline& timeline, int64_t span_ms);
Chart DecisionStrip(const BuildTimeline& timeline, int64_t span_ms);
Chart EstimateScatter(const BuildTimeline& timeline);

}  // namespace headroom
