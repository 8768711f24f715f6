// Metrics: the counts and wall times behind `-d stats` (named operations, in order of first use), and the
// table it prints. Off unless enabled: a disabled ScopedMetric costs one branch.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace headroom {

struct Metric {
  std::string name;
  int64_t count = 0;
  int64_t total_us = 0;
};

// Turns recording on (-d stats) for the rest of the process.
void EnableMetrics();
bool MetricsEnabled();
// The metric called `name`, registered on first use; nullptr while metrics are off.
Metric* MetricNamed(const char* name);

// Times its own lifetime into a metric (none when null).
class ScopedMetric {
 public:
  explicit ScopedMetric(Metric* metric);
  ~ScopedMetric();
  ScopedMetric(const ScopedMetric&) = delete;
  ScopedMetric& operator=(const ScopedMetric&) = delete;

 private:
  Metric* metric_;
  int64_t start_us_ = 0;
};

// Times the enclosing scope as `name` when metrics are on.
inline ScopedMetric TimeScope(const char* name) { return ScopedMetric(MetricsEnabled() ? MetricNamed(name) : nullptr); }

// Writes the table ninja's -d stats prints: one row per metric with its count, mean and total time.
void ReportMetrics(std::FILE* out);

}  // namespace headroom
