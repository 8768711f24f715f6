// Formatting helpers for the build summary, trace and report: times, sizes, escaping, axis ticks.
#include "headroom/report/report_format.h"

#include <errno.h>
#include <string.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>

#include "headroom/util/byte_size.h"

namespace headroom {

std::string FormatDuration(int64_t ms) {
  if (ms < 0) ms = 0;
  char text[32];
  if (ms < 1000) {
    snprintf(text, sizeof text, "%lldms", static_cast<long long>(ms));
  } else if (ms < 60'000) {
    snprintf(text, sizeof text, "%.1fs", static_cast<double>(ms) / 1000.0);
  } else if (ms < 3'600'000) {
    const long long seconds = ms / 1000;
    snprintf(text, sizeof text, "%lldm%02llds", seconds / 60, seconds % 60);
  } else {
    const long long minutes = ms / 60'000;
    snprintf(text, sizeof text, "%lldh%02lldm", minutes / 60, minutes % 60);
  }
  return text;
}

std::string FormatClock(int64_t ms, bool tenths) {
  if (ms < 0) ms = 0;
  const long long total_seconds = ms / 1000;
  const long long hours = total_seconds / 3600, minutes = total_seconds / 60 % 60, seconds = total_seconds % 60;
  char text[40];
  if (hours > 0)
    snprintf(text, sizeof text, "%lld:%02lld:%02lld", hours, minutes, seconds);
  else
    snprintf(text, sizeof text, "%lld:%02lld", minutes, seconds);
  std::string clock = text;
  if (tenths) clock += "." + std::to_string(ms % 1000 / 100);
  return clock;
}

uint64_t AxisUnit(uint64_t max_bytes) { return max_bytes >= kGiB ? kGiB : kMiB; }

const char* AxisUnitName(uint64_t unit) { return unit == kGiB ? "GiB" : "MiB"; }

std::string FormatInUnit(uint64_t bytes, uint64_t unit) {
  const double value = static_cast<double>(bytes) / static_cast<double>(unit);
  char text[32];
  // Whole numbers stay whole ("2 GiB" axis ticks); fractions get one decimal, which is all a chart shows.
  if (std::fabs(value - std::round(value)) < 1e-9)
    snprintf(text, sizeof text, "%.0f", value);
  else
    snprintf(text, sizeof text, "%.1f", value);
  return text;
}

double EstimateErrorPct(uint64_t estimate, uint64_t actual) {
  if (actual == 0) return 0.0;
  return (static_cast<double>(estimate) - static_cast<double>(actual)) * 100.0 / static_cast<double>(actual);
}

std::string HtmlEscape(std::string_view text) {
  std::string escaped;
  escaped.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': escaped += "&amp;"; break;
      case '<': escaped += "&lt;"; break;
      case '>': escaped += "&gt;"; break;
      case '"': escaped += "&quot;"; break;
      case '\'': escaped += "&#39;"; break;
      default: escaped += c;
    }
  }
  return escaped;
}

std::vector<double> NiceTicks(double max, int target) {
  if (!(max > 0)) return {0.0};
  const double rough = max / std::max(1, target);
  const double magnitude = std::pow(10.0, std::floor(std::log10(rough)));
  double step = magnitude;
  for (double factor : {1.0, 2.0, 5.0, 10.0}) {
    step = factor * magnitude;
    if (step >= rough) break;
  }
  std::vector<double> ticks;
  for (int i = 0;; ++i) {
    const double tick = step * i;
    ticks.push_back(tick);
    if (tick >= max - 1e-9) break;
  }
  return ticks;
}

int64_t TimeTickStep(int64_t span_ms, int target) {
  static constexpr int64_t kSteps[] = {100,    200,    500,     1000,    2000,    5000,     10'000,   15'000,
                                       30'000, 60'000, 120'000, 300'000, 600'000, 900'000,  1'800'000,
                                       3'600'000, 7'200'000, 14'400'000};
  const int64_t rough = span_ms / std::max(1, target);
  for (int64_t step : kSteps) {
    if (step >= rough) return step;
  }
  return kSteps[std::size(kSteps) - 1];
}

bool WriteOutputFile(const std::string& path, const std::string& content, std::string* err) {
  FILE* file = fopen(path.c_str(), "wb");
  if (!file) {
    *err = strerror(errno);
    return false;
  }
  const bool written = fwrite(content.data(), 1, content.size(), file) == content.size();
  const int write_errno = errno;
  const bool closed = fclose(file) == 0;
  if (!written || !closed) {
    *err = strerror(written ? errno : write_errno);
    return false;
  }
  return true;
}

}  // namespace headroom
