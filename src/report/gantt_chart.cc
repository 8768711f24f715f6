// The report's "jobs by lane" chart: one row per lane, each job a box as long as it ran, coloured by
// outcome, filled from the bottom up to its measured peak, with a tick at its estimate.
#include <algorithm>
#include <map>
#include <vector>

#include "headroom/util/byte_size.h"
#include "headroom/report/report_charts.h"
#include "headroom/report/report_format.h"
#include "headroom/report/svg.h"

namespace headroom {

namespace {

constexpr double kGanttWidth = 1120;
constexpr double kGanttLeft = 64, kGanttRight = 16, kGanttTop = 6, kGanttAxis = 26;
constexpr double kClusterPx = 4.0;

// How bad an outcome is, so a cluster of short jobs shows the worst of them.
int Severity(std::string_view outcome) {
  if (outcome == "ok") return 0;
  if (outcome == "interrupted") return 1;
  if (outcome == "safety-killed") return 2;
  if (outcome == "oom-killed") return 3;
  return 4;  // failed
}

std::string JobTip(const TimelineJob& job) {
  std::string tip = job.output + "\n" + FormatClock(job.start_ms, true) + " – " + FormatClock(job.end_ms, true) +
                    " (" + FormatDuration(job.end_ms - job.start_ms) + "), " + job.outcome;
  if (job.peak_bytes) tip += "\npeak " + FormatBytes(job.peak_bytes);
  if (job.estimate_bytes) tip += ", estimated " + FormatBytes(job.estimate_bytes) + " (" + job.estimate_source + ")";
  if (job.waited_ms > 0) tip += "\nwaited " + FormatDuration(job.waited_ms) + " for memory";
  if (!job.exec_mode.empty()) tip += "\nran " + job.exec_mode;
  return tip;
}

struct Cluster {
  int count = 0;
  uint64_t peak = 0;
  int severity = -1;
  std::string outcome;
  int64_t first_start = 0, last_end = 0;
};

struct Lane {
  double top = 0, height = 0;
  double Bottom() const { return top + height; }
};

class GanttPainter {
 public:
  GanttPainter(Svg* svg, TimeScale time, uint64_t peak_scale) : svg_(svg), time_(time), peak_scale_(peak_scale) {}

  void Job(const TimelineJob& job, const Lane& lane) {
    const double x = time_.X(job.start_ms), width = time_.X(job.end_ms) - x;
    const char* color = OutcomeColor(job.outcome);
    svg_->Rect(x, lane.top, std::max(width, 1.0), lane.height,
               std::string("class=\"job\" fill=\"") + color + "\" " + Tip(JobTip(job)));
    svg_->Rect(x, lane.Bottom() - FillHeight(job.peak_bytes, lane), std::max(width, 1.0),
               FillHeight(job.peak_bytes, lane), std::string("class=\"peak\" fill=\"") + color + "\"");
    if (job.estimate_bytes > 0 && peak_scale_ > 0) {
      const double y = lane.Bottom() - Height(job.estimate_bytes, lane);
      svg_->Line(x, y, x + std::max(width, 1.0), y, "class=\"estimate\"");
    }
  }

  void Clustered(const Cluster& cluster, double column_x, const Lane& lane) {
    const char* color = OutcomeColor(cluster.outcome);
    std::string tip = std::to_string(cluster.count) + " short jobs, " + FormatClock(cluster.first_start, true) +
                      " – " + FormatClock(cluster.last_end, true);
    if (cluster.peak) tip += "\nheaviest peak " + FormatBytes(cluster.peak);
    svg_->Rect(column_x, lane.top, kClusterPx - 0.5, lane.height,
               std::string("class=\"job\" fill=\"") + color + "\" " + Tip(tip));
    svg_->Rect(column_x, lane.Bottom() - FillHeight(cluster.peak, lane), kClusterPx - 0.5,
               FillHeight(cluster.peak, lane), std::string("class=\"peak\" fill=\"") + color + "\"");
  }

 private:
  double Height(uint64_t bytes, const Lane& lane) const {
    return lane.height * static_cast<double>(bytes) / static_cast<double>(peak_scale_);
  }
  // Without measurements the whole box is filled; a measured job always shows a sliver.
  double FillHeight(uint64_t peak, const Lane& lane) const {
    if (peak_scale_ == 0) return lane.height;
    return std::max(2.0, Height(peak, lane));
  }

  Svg* svg_;
  TimeScale time_;
  uint64_t peak_scale_;
};

}  // namespace

Chart GanttChart(const BuildTimeline& timeline, int64_t span_ms) {
  Chart chart;
  if (timeline.jobs().empty()) return chart;
  int lanes = 0;
  uint64_t peak_scale = 0;
  for (const TimelineJob& job : timeline.jobs()) {
    lanes = std::max(lanes, job.slot + 1);
    peak_scale = std::max({peak_scale, job.peak_bytes, job.estimate_bytes});
  }
  // Rows shrink as lanes grow, so -j64 stays on a screen and -j1 is not a sliver.
  const double row = std::clamp(420.0 / lanes, 9.0, 34.0);
  const double height = kGanttTop + row * lanes + kGanttAxis;
  Svg svg(kGanttWidth, height, "Jobs by lane over time");
  const TimeScale time{kGanttLeft, kGanttWidth - kGanttLeft - kGanttRight, std::max<int64_t>(1, span_ms)};
  for (int lane = 0; lane < lanes; ++lane) {
    const double top = kGanttTop + row * lane;
    if (lane % 2 == 0) svg.Rect(kGanttLeft, top, time.width, row, "class=\"stripe\"");
    if (row >= 12 || lane % 5 == 0)
      svg.Text(kGanttLeft - 8, top + row / 2 + 4, std::to_string(lane + 1), "class=\"axis\" text-anchor=\"end\"");
  }
  DrawTimeAxis(&svg, time, kGanttTop, kGanttTop + row * lanes, true);

  GanttPainter painter(&svg, time, peak_scale);
  std::map<std::pair<int, int64_t>, Cluster> clusters;  // (lane, pixel column) -> short jobs there
  const int64_t end_of_build = std::max<int64_t>(1, span_ms);
  for (const TimelineJob& job : timeline.jobs()) {
    TimelineJob drawn = job;
    if (drawn.end_ms < 0) drawn.end_ms = end_of_build;
    const Lane lane{kGanttTop + row * job.slot + 1, row - 2};
    if (time.X(drawn.end_ms) - time.X(drawn.start_ms) >= kMinBarPx) {
      painter.Job(drawn, lane);
      continue;
    }
    const double mid = time.X((drawn.start_ms + drawn.end_ms) / 2) - kGanttLeft;
    Cluster& cluster = clusters[{job.slot, static_cast<int64_t>(mid / kClusterPx)}];
    if (cluster.count++ == 0) cluster.first_start = drawn.start_ms;
    cluster.first_start = std::min(cluster.first_start, drawn.start_ms);
    cluster.last_end = std::max(cluster.last_end, drawn.end_ms);
    cluster.peak = std::max(cluster.peak, drawn.peak_bytes);
    if (Severity(drawn.outcome) > cluster.severity) {
      cluster.severity = Severity(drawn.outcome);
      cluster.outcome = drawn.outcome;
    }
  }
  for (const auto& [where, cluster] : clusters) {
    const Lane lane{kGanttTop + row * where.first + 1, row - 2};
    painter.Clustered(cluster, kGanttLeft + static_cast<double>(where.second) * kClusterPx, lane);
  }

  for (const char* outcome : {"ok", "failed", "oom-killed", "safety-killed", "interrupted"}) {
    const bool present = std::any_of(timeline.jobs().begin(), timeline.jobs().end(),
                                     [&](const TimelineJob& job) { return job.outcome == outcome; });
    if (present || std::string_view(outcome) == "ok")
      chart.legend += std::string("<span class=\"key\"><i style=\"background:") + OutcomeColor(outcome) + "\"></i>" +
                      outcome + "</span>";
  }
  if (peak_scale > 0)
    chart.legend +=
        "<span class=\"key\"><i class=\"fill-key\"></i>filled to measured peak</span>"
        "<span class=\"key\"><i class=\"estimate-key\"></i>estimate</span>";
  chart.elements = svg.elements();
  chart.svg = svg.Finish();
  return chart;
}

}  // namespace headroom
