// The process-wide -d stats registry and its report.
#include "headroom/util/metrics.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>

namespace headroom {
namespace {

bool g_enabled = false;
std::deque<Metric>& Registry() {  // a deque: metrics handed out never move.
  static std::deque<Metric> metrics;
  return metrics;
}

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void EnableMetrics() { g_enabled = true; }
bool MetricsEnabled() { return g_enabled; }

Metric* MetricNamed(const char* name) {
  if (!g_enabled) return nullptr;
  for (Metric& metric : Registry()) {
    if (metric.name == name) return &metric;
  }
  return &Registry().emplace_back(Metric{name});
}

ScopedMetric::ScopedMetric(Metric* metric) : metric_(metric) {
  if (metric_) start_us_ = NowUs();
}

ScopedMetric::~ScopedMetric() {
  if (!metric_) return;
  ++metric_->count;
  metric_->total_us += NowUs() - start_us_;
}

void ReportMetrics(std::FILE* out) {
  int width = static_cast<int>(std::strlen("metric"));
  for (const Metric& metric : Registry()) width = std::max(width, static_cast<int>(metric.name.size()));
  std::fprintf(out, "%-*s\t%-6s\t%-9s\t%s\n", width, "metric", "count", "avg (us)", "total (ms)");
  for (const Metric& metric : Registry()) {
    double average_us = metric.count ? static_cast<double>(metric.total_us) / static_cast<double>(metric.count) : 0;
    std::fprintf(out, "%-*s\t%-6lld\t%-8.1f\t%.1f\n", width, metric.name.c_str(), static_cast<long long>(metric.count),
                 average_us, static_cast<double>(metric.total_us) / 1000.0);
  }
}

}  // namespace headroom
