// The report's smaller charts and shared chart helpers: the decisions strip (waits, freezes, kills,
// requeues over time), the estimate-vs-measured scatter, colours, names and the time span.
#include "headroom/report/report_charts.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "headroom/util/byte_size.h"
#include "headroom/report/report_format.h"
#include "headroom/report/svg.h"

namespace headroom {

namespace {

constexpr const char* kMarkerKinds[] = {"wait",    "over-budget", "freeze",  "thaw",           "kill",
                                        "oom",     "requeue",     "gave-up", "remote-fallback"};

const char* MarkerLabel(std::string_view kind) {
  if (kind == "wait") return "waited";
  if (kind == "over-budget") return "over budget";
  if (kind == "freeze") return "froze";
  if (kind == "thaw") return "thawed";
  if (kind == "kill") return "killed";
  if (kind == "oom") return "OOM kill";
  if (kind == "requeue") return "requeued";
  if (kind == "gave-up") return "gave up";
  if (kind == "remote-fallback") return "fell back";
  return "other";
}

const char* SourceColor(std::string_view source) {
  if (source == "edge history") return "#2f7ed8";
  if (source == "class history") return "#3aa387";
  if (source == "headroom_mem hint") return "#8e6bbf";
  return "#e08a2c";  // prior
}

}  // namespace

int64_t ReportSpanMs(const BuildTimeline& timeline) {
  int64_t span = timeline.facts().duration_ms;
  for (const TimelineJob& job : timeline.jobs()) span = std::max({span, job.start_ms, job.end_ms});
  for (const MemorySample& sample : timeline.samples()) span = std::max(span, sample.t_ms);
  for (const TimelineMarker& marker : timeline.markers()) span = std::max(span, marker.t_ms);
  return std::max<int64_t>(span, 1);
}

const char* OutcomeColor(std::string_view outcome) {
  if (outcome == "ok") return "#4f86c6";
  if (outcome == "failed") return "#d64545";
  if (outcome == "oom-killed") return "#e8772e";
  if (outcome == "safety-killed") return "#d4a72c";
  return "#9aa5b1";  // interrupted or unknown
}

const char* MarkerColor(std::string_view kind) {
  if (kind == "wait") return "#e0a030";
  if (kind == "over-budget") return "#e8772e";
  if (kind == "freeze") return "#3b9bd9";
  if (kind == "thaw") return "#8cc8ee";
  if (kind == "kill") return "#d64545";
  if (kind == "oom") return "#a11d1d";
  if (kind == "requeue") return "#8e6bbf";
  if (kind == "gave-up") return "#5b1414";
  if (kind == "remote-fallback") return "#0f766e";
  return "#6b7280";
}

std::string ShortName(std::string_view path, size_t max_chars) {
  if (path.size() <= max_chars) return std::string(path);
  std::string_view tail = path.substr(path.size() - (max_chars - 1));
  // Prefer to cut at a directory boundary, so the file name stays whole.
  if (size_t slash = tail.find('/'); slash != std::string_view::npos && slash + 1 < tail.size())
    tail = tail.substr(slash);
  return "…" + std::string(tail);
}

Chart DecisionStrip(const BuildTimeline& timeline, int64_t span_ms) {
  Chart chart;
  if (timeline.markers().empty()) return chart;
  constexpr double kWidth = 1120, kLeft = 110, kRight = 16, kRow = 22, kAxis = 26;
  constexpr double kBinPx = 3.0;
  std::vector<std::string_view> kinds;
  for (const char* kind : kMarkerKinds) {
    if (std::any_of(timeline.markers().begin(), timeline.markers().end(),
                    [&](const TimelineMarker& marker) { return marker.kind == kind; }))
      kinds.push_back(kind);
  }
  const double height = kRow * static_cast<double>(kinds.size()) + kAxis + 4;
  Svg svg(kWidth, height, "Memory decisions over time");
  const TimeScale time{kLeft, kWidth - kLeft - kRight, std::max<int64_t>(1, span_ms)};
  DrawTimeAxis(&svg, time, 2, 2 + kRow * static_cast<double>(kinds.size()), true);
  for (size_t row = 0; row < kinds.size(); ++row) {
    const double y = 2 + kRow * static_cast<double>(row) + kRow / 2;
    svg.Text(kLeft - 10, y + 4, MarkerLabel(kinds[row]), "class=\"axis\" text-anchor=\"end\"");
    svg.Line(kLeft, y, kWidth - kRight, y, "class=\"rowline\"");
    // Markers a few pixels apart share one dot (its tooltip counts them), so thousands of waits stay legible.
    std::map<int64_t, std::vector<const TimelineMarker*>> bins;
    for (const TimelineMarker& marker : timeline.markers()) {
      if (marker.kind == kinds[row])
        bins[static_cast<int64_t>((time.X(marker.t_ms) - kLeft) / kBinPx)].push_back(&marker);
    }
    for (const auto& [bin, markers] : bins) {
      const TimelineMarker& first = *markers.front();
      std::string tip = FormatClock(first.t_ms, true) + "  " + MarkerLabel(first.kind) + ": " + first.output;
      if (!first.detail.empty()) tip += "\n" + first.detail;
      if (markers.size() > 1) tip += "\n(+" + std::to_string(markers.size() - 1) + " more here)";
      const double radius = markers.size() > 1 ? 5.5 : 4.5;
      svg.Circle(time.X(first.t_ms), y, radius,
                 std::string("class=\"marker\" fill=\"") + MarkerColor(first.kind) + "\" " + Tip(tip));
    }
    chart.legend += std::string("<span class=\"key\"><i class=\"dot\" style=\"background:") +
                    MarkerColor(kinds[row]) + "\"></i>" + MarkerLabel(kinds[row]) + "</span>";
  }
  chart.elements = svg.elements();
  chart.svg = svg.Finish();
  return chart;
}

Chart EstimateScatter(const BuildTimeline& timeline) {
  Chart chart;
  std::vector<const TimelineJob*> jobs;
  for (const TimelineJob& job : timeline.jobs()) {
    if (job.peak_bytes > 0 && job.estimate_bytes > 0) jobs.push_back(&job);
  }
  if (jobs.empty()) return chart;
  if (jobs.size() > static_cast<size_t>(kMaxScatterPoints)) {
    std::partial_sort(jobs.begin(), jobs.begin() + kMaxScatterPoints, jobs.end(),
                      [](const TimelineJob* a, const TimelineJob* b) { return a->peak_bytes > b->peak_bytes; });
    jobs.resize(kMaxScatterPoints);
  }
  // Log scale on both axes, whole powers of two: sizes from a few MiB to tens of GiB share a chart.
  uint64_t low = UINT64_MAX, high = 0;
  for (const TimelineJob* job : jobs) {
    low = std::min({low, job->peak_bytes, job->estimate_bytes});
    high = std::max({high, job->peak_bytes, job->estimate_bytes});
  }
  const double log_low = std::floor(std::log2(static_cast<double>(std::max<uint64_t>(low, kMiB))));
  double log_high = std::ceil(std::log2(static_cast<double>(std::max<uint64_t>(high, 2 * kMiB))));
  if (log_high <= log_low) log_high = log_low + 1;
  constexpr double kSize = 420, kLeft = 70, kBottom = 44, kTop = 12, kRight = 16;
  const double plot = kSize - kLeft - kRight;
  auto to_x = [&](double bytes) {
    return kLeft + plot * (std::log2(std::max(bytes, 1.0)) - log_low) / (log_high - log_low);
  };
  auto to_y = [&](double bytes) {
    return kTop + plot - plot * (std::log2(std::max(bytes, 1.0)) - log_low) / (log_high - log_low);
  };
  Svg svg(kSize, kTop + plot + kBottom, "Estimated against measured peak memory, one dot per job");
  const int step = (log_high - log_low) > 8 ? 2 : 1;
  for (int power = static_cast<int>(log_low); power <= static_cast<int>(log_high); power += step) {
    const double bytes = std::ldexp(1.0, power);
    const std::string label = FormatBytes(static_cast<uint64_t>(bytes));
    svg.Line(to_x(bytes), kTop, to_x(bytes), kTop + plot, "class=\"grid\"");
    svg.Line(kLeft, to_y(bytes), kLeft + plot, to_y(bytes), "class=\"grid\"");
    svg.Text(to_x(bytes), kTop + plot + 16, label, "class=\"axis\" text-anchor=\"middle\"");
    svg.Text(kLeft - 6, to_y(bytes) + 4, label, "class=\"axis\" text-anchor=\"end\"");
  }
  // The band where an estimate is within 25% of the measured peak, around the perfect diagonal.
  const double lo = std::ldexp(1.0, static_cast<int>(log_low)), hi = std::ldexp(1.0, static_cast<int>(log_high));
  svg.Polygon({{to_x(lo), to_y(lo * 1.25)}, {to_x(hi / 1.25), to_y(hi)}, {to_x(hi), to_y(hi)},
               {to_x(hi), to_y(hi * 0.75)}, {to_x(lo / 0.75), to_y(lo)}, {to_x(lo), to_y(lo)}},
              "class=\"band\"");
  svg.Line(to_x(lo), to_y(lo), to_x(hi), to_y(hi), "class=\"diagonal\"");
  svg.Text(kLeft + plot / 2, kTop + plot + 36, "measured peak", "class=\"axis-title\" text-anchor=\"middle\"");
  svg.Text(14, kTop + plot / 2, "estimate",
           "class=\"axis-title\" text-anchor=\"middle\" transform=\"rotate(-90 14 " + Num(kTop + plot / 2) + ")\"");
  for (const TimelineJob* job : jobs) {
    const std::string tip = job->output + "\nestimated " + FormatBytes(job->estimate_bytes) + " (" +
                            job->estimate_source + "), measured " + FormatBytes(job->peak_bytes) + "\nerror " +
                            Num(EstimateErrorPct(job->estimate_bytes, job->peak_bytes)) + "%";
    svg.Circle(to_x(static_cast<double>(job->peak_bytes)), to_y(static_cast<double>(job->estimate_bytes)), 3.5,
               std::string("class=\"point\" fill=\"") + SourceColor(job->estimate_source) + "\" " + Tip(tip));
  }
  for (const char* source : {"edge history", "class history", "headroom_mem hint", "prior"}) {
    if (std::any_of(jobs.begin(), jobs.end(), [&](const TimelineJob* job) { return job->estimate_source == source; }))
      chart.legend += std::string("<span class=\"key\"><i class=\"dot\" style=\"background:") + SourceColor(source) +
                      "\"></i>" + source + "</span>";
  }
  chart.elements = svg.elements();
  chart.svg = svg.Finish();
  return chart;
}

}  // namespace headroom
