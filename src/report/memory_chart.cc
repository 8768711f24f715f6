// The report's "memory over time" chart: the build's memory stacked by job (the heaviest on their
// own, the rest together), what running jobs are still expected to grow, the reserve and the budget.
#include <algorithm>
#include <map>
#include <vector>

#include "headroom/util/byte_size.h"
#include "headroom/report/report_charts.h"
#include "headroom/report/report_format.h"
#include "headroom/report/svg.h"

namespace headroom {

namespace {

constexpr double kMemoryWidth = 1120, kMemoryHeight = 340;
constexpr double kMemoryLeft = 64, kMemoryRight = 16, kMemoryTop = 14, kMemoryBottom = 30;

// Layer of each job index: 0..K-1 for the heaviest sampled jobs (heaviest at the bottom), K for the rest.
std::map<size_t, int> AssignLayers(const BuildTimeline& timeline, int* layer_count) {
  std::map<size_t, uint64_t> largest;
  for (const MemorySample& sample : timeline.samples()) {
    for (const JobUsage& usage : sample.jobs) largest[usage.job] = std::max(largest[usage.job], usage.bytes);
  }
  std::vector<std::pair<uint64_t, size_t>> ranked;
  for (const auto& [job, bytes] : largest) ranked.emplace_back(bytes, job);
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::map<size_t, int> layers;
  const int own = static_cast<int>(std::min<size_t>(ranked.size(), kMemoryJobLayers));
  for (size_t i = 0; i < ranked.size(); ++i) layers[ranked[i].second] = std::min(static_cast<int>(i), own);
  *layer_count = own + (ranked.size() > static_cast<size_t>(own) ? 1 : 0);
  return layers;
}

// Keeps at most kMaxMemoryPoints samples: of each run of neighbours, the one using the most memory,
// so peaks survive (an average would hide exactly what the chart is for).
std::vector<const MemorySample*> Decimate(const std::vector<MemorySample>& samples) {
  std::vector<const MemorySample*> kept;
  const size_t group = (samples.size() + kMaxMemoryPoints - 1) / kMaxMemoryPoints;
  for (size_t begin = 0; begin < samples.size(); begin += group) {
    const MemorySample* best = &samples[begin];
    for (size_t i = begin; i < std::min(samples.size(), begin + group); ++i) {
      if (samples[i].used_bytes > best->used_bytes) best = &samples[i];
    }
    kept.push_back(best);
  }
  return kept;
}

std::string LayerColor(int layer, int own_layers) {
  // Ten soft, clearly different colours (neighbours never share a hue family); the rest is grey.
  static constexpr const char* kPalette[kMemoryJobLayers] = {"#5b9bd5", "#e0736a", "#6cc57c", "#9b7ede",
                                                             "#e7a94b", "#4fc1c0", "#d572c6", "#a5c35a",
                                                             "#7f8fd6", "#c9956a"};
  if (layer >= own_layers) return "#c8d0da";
  return kPalette[layer];
}

struct Scale {
  TimeScale time;
  double y_bottom = 0, y_height = 0;
  double max_bytes = 1;
  double Y(double bytes) const { return y_bottom - y_height * bytes / max_bytes; }
};

uint64_t BudgetOf(const BuildTimeline& timeline) {
  uint64_t budget = timeline.facts().budget_bytes;
  for (const MemorySample& sample : timeline.samples()) budget = std::max(budget, sample.budget_bytes);
  return budget;
}

void DrawBytesAxis(Svg* svg, const Scale& scale, uint64_t unit) {
  const double max_units = scale.max_bytes / static_cast<double>(unit);
  for (double tick : NiceTicks(max_units, 5)) {
    const double bytes = tick * static_cast<double>(unit);
    if (bytes > scale.max_bytes) break;
    const double y = scale.Y(bytes);
    svg->Line(kMemoryLeft, y, kMemoryWidth - kMemoryRight, y, "class=\"grid\"");
    svg->Text(kMemoryLeft - 8, y + 4, FormatInUnit(static_cast<uint64_t>(bytes), unit) + " " + AxisUnitName(unit),
              "class=\"axis\" text-anchor=\"end\"");
  }
}

std::string LegendItem(const std::string& swatch_style, const std::string& label, const std::string& tip = "") {
  return "<span class=\"key\"" + (tip.empty() ? std::string() : " " + Tip(tip)) + "><i style=\"" + swatch_style +
         "\"></i>" + HtmlEscape(label) + "</span>";
}

}  // namespace

Chart MemoryChart(const BuildTimeline& timeline, int64_t span_ms) {
  Chart chart;
  if (timeline.samples().empty()) return chart;
  int layer_count = 0;
  std::map<size_t, int> layer_of = AssignLayers(timeline, &layer_count);
  const int own_layers = std::min(layer_count, kMemoryJobLayers);
  std::vector<const MemorySample*> samples = Decimate(timeline.samples());

  // Per kept sample: the stacked tops of each layer.
  std::vector<std::vector<double>> stack(samples.size(), std::vector<double>(layer_count + 1, 0.0));
  double highest = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    std::vector<double> values(layer_count, 0.0);
    for (const JobUsage& usage : samples[i]->jobs) values[layer_of[usage.job]] += static_cast<double>(usage.bytes);
    for (int layer = 0; layer < layer_count; ++layer) stack[i][layer + 1] = stack[i][layer] + values[layer];
    highest = std::max({highest, stack[i][layer_count],
                        static_cast<double>(samples[i]->used_bytes + samples[i]->reserved_bytes)});
  }
  const uint64_t budget = BudgetOf(timeline);
  Scale scale;
  scale.time = TimeScale{kMemoryLeft, kMemoryWidth - kMemoryLeft - kMemoryRight, std::max<int64_t>(1, span_ms)};
  scale.y_bottom = kMemoryHeight - kMemoryBottom;
  scale.y_height = kMemoryHeight - kMemoryTop - kMemoryBottom;
  // A build that used a sliver of its budget is drawn to its own scale; a flat line at the bottom of a
  // chart sized for the budget would show nothing.
  const bool budget_on_chart = budget > 0 && highest * 4 >= static_cast<double>(budget);
  scale.max_bytes = std::max({highest, budget_on_chart ? static_cast<double>(budget) : 0.0, 1.0 * kMiB}) * 1.08;

  Svg svg(kMemoryWidth, kMemoryHeight, "Memory used by the build's jobs over time, against the budget");
  svg.Raw(
      "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
      "patternTransform=\"rotate(45)\"><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" class=\"hatch\"/></pattern></defs>\n",
      3);
  const uint64_t unit = AxisUnit(static_cast<uint64_t>(scale.max_bytes));
  DrawBytesAxis(&svg, scale, unit);
  DrawTimeAxis(&svg, scale.time, kMemoryTop, scale.y_bottom, true);

  const uint64_t reserve = std::min(timeline.facts().reserve_bytes, budget);
  if (budget_on_chart && reserve > 0) {
    svg.Rect(kMemoryLeft, scale.Y(static_cast<double>(budget)), scale.time.width,
             scale.Y(static_cast<double>(budget - reserve)) - scale.Y(static_cast<double>(budget)),
             "class=\"reserve\" " + Tip("reserve: " + FormatBytes(reserve) + " kept free below the budget"));
  }

  // Each series starts and ends at zero where the first job started and the last one ended.
  int64_t first_start = span_ms, last_end = 0;
  for (const TimelineJob& job : timeline.jobs()) {
    first_start = std::min(first_start, job.start_ms);
    last_end = std::max(last_end, job.end_ms);
  }
  first_start = std::min(first_start, samples.front()->t_ms);
  last_end = std::max(last_end, samples.back()->t_ms);

  std::vector<std::string> layer_names(layer_count);
  std::vector<uint64_t> layer_peaks(layer_count, 0);
  int other_jobs = 0;
  for (const auto& [job, layer] : layer_of) {
    if (layer < own_layers) {
      layer_names[layer] = timeline.jobs()[job].output;
      layer_peaks[layer] = timeline.jobs()[job].peak_bytes;
    } else {
      ++other_jobs;
    }
  }
  for (int layer = 0; layer < layer_count; ++layer) {
    std::vector<Point> points{{scale.time.X(first_start), scale.Y(0)}};
    for (size_t i = 0; i < samples.size(); ++i)
      points.push_back({scale.time.X(samples[i]->t_ms), scale.Y(stack[i][layer + 1])});
    points.push_back({scale.time.X(last_end), scale.Y(0)});
    for (size_t i = samples.size(); i-- > 0;)
      points.push_back({scale.time.X(samples[i]->t_ms), scale.Y(stack[i][layer])});
    const std::string color = LayerColor(layer, own_layers);
    const std::string tip = layer < own_layers
                                ? layer_names[layer] + "\npeak " + FormatBytes(layer_peaks[layer])
                                : std::to_string(other_jobs) + " other jobs";
    svg.Polygon(points, "class=\"layer\" fill=\"" + color + "\" " + Tip(tip));
    const std::string label = layer < own_layers ? ShortName(layer_names[layer], 36)
                                                 : std::to_string(other_jobs) + " other jobs";
    chart.legend += LegendItem("background:" + color, label, tip);
  }

  // What running jobs may still grow by, drawn on top of what they use now.
  std::vector<Point> growth;
  for (const MemorySample* sample : samples)
    growth.push_back({scale.time.X(sample->t_ms), scale.Y(static_cast<double>(sample->used_bytes + sample->reserved_bytes))});
  for (size_t i = samples.size(); i-- > 0;)
    growth.push_back({scale.time.X(samples[i]->t_ms), scale.Y(static_cast<double>(samples[i]->used_bytes))});
  svg.Polygon(growth, "class=\"growth\"");

  std::vector<Point> used{{scale.time.X(first_start), scale.Y(0)}};
  for (const MemorySample* sample : samples)
    used.push_back({scale.time.X(sample->t_ms), scale.Y(static_cast<double>(sample->used_bytes))});
  used.push_back({scale.time.X(last_end), scale.Y(0)});
  svg.Polyline(used, "class=\"used\"");

  if (budget > 0 && !budget_on_chart) {
    svg.Text(kMemoryWidth - kMemoryRight - 4, kMemoryTop + 10,
             "budget " + FormatBytes(budget) + " (far above this scale)", "class=\"budget-label\" text-anchor=\"end\"");
  } else if (budget > 0) {
    const double y = scale.Y(static_cast<double>(budget));
    svg.Line(kMemoryLeft, y, kMemoryWidth - kMemoryRight, y, "class=\"budget\"");
    svg.Text(kMemoryWidth - kMemoryRight - 4, y - 6, "budget " + FormatBytes(budget),
             "class=\"budget-label\" text-anchor=\"end\"");
  }
  svg.Line(kMemoryLeft, scale.y_bottom, kMemoryWidth - kMemoryRight, scale.y_bottom, "class=\"baseline\"");

  chart.legend += LegendItem("background:transparent;border-top:2px solid #1f2937;height:0;margin-top:6px",
                             "in use (all jobs)");
  chart.legend += LegendItem("background:rgba(70,110,180,.07);border:1px dashed #7d98c9", "still expected (reserved)");
  if (budget_on_chart) chart.legend += LegendItem("border-top:2px dashed #c62828;height:0;margin-top:6px", "budget");
  if (budget_on_chart && reserve > 0) chart.legend += LegendItem("background:rgba(198,40,40,.12)", "reserve kept free");
  chart.elements = svg.elements();
  chart.svg = svg.Finish();
  return chart;
}

}  // namespace headroom
