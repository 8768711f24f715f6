// Parsing and formatting of "5h30m"-style durations (--deadline, -t plan --deadline).
#include "headroom/util/duration.h"

#include <cstdio>

namespace headroom {

namespace {

constexpr int64_t kMaxDurationMs = int64_t{366} * 24 * 3600 * 1000;  // a year: anything longer is a typo

int64_t UnitMs(char unit) {
  switch (unit) {
    case 'h': return 3600 * 1000;
    case 'm': return 60 * 1000;
    case 's': return 1000;
    default: return 0;
  }
}

}  // namespace

std::optional<int64_t> ParseDuration(std::string_view text, std::string* error) {
  if (text.empty()) {
    *error = "empty duration";
    return std::nullopt;
  }
  int64_t total_ms = 0;
  int64_t last_unit_ms = 0;  // units must come largest first, each once
  size_t i = 0;
  while (i < text.size()) {
    const size_t digits_start = i;
    int64_t value = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      value = value * 10 + (text[i] - '0');
      if (value > kMaxDurationMs) {
        *error = "more than a year";
        return std::nullopt;
      }
      ++i;
    }
    if (i == digits_start) {
      *error = "'" + std::string(text.substr(i)) + "' does not start with a number";
      return std::nullopt;
    }
    if (i == text.size()) {
      *error = "'" + std::string(text.substr(digits_start)) + "' has no unit (h, m or s)";
      return std::nullopt;
    }
    const int64_t unit_ms = UnitMs(text[i]);
    if (unit_ms == 0) {
      *error = "unknown unit '" + std::string(1, text[i]) + "' (expected h, m or s)";
      return std::nullopt;
    }
    if (last_unit_ms != 0 && unit_ms >= last_unit_ms) {
      *error = "units must be given largest first, each once";
      return std::nullopt;
    }
    last_unit_ms = unit_ms;
    total_ms += value * unit_ms;
    if (total_ms > kMaxDurationMs) {
      *error = "more than a year";
      return std::nullopt;
    }
    ++i;
  }
  if (total_ms == 0) {
    *error = "the duration must be above 0";
    return std::nullopt;
  }
  return total_ms;
}

std::string DurationText(int64_t ms) {
  if (ms < 0) return "-" + DurationText(-ms);
  char text[64];
  if (ms < 1000 && ms > 0) {
    std::snprintf(text, sizeof text, "%.1fs", static_cast<double>(ms) / 1000.0);
    return text;
  }
  const int64_t seconds = (ms + 500) / 1000;
  const int64_t h = seconds / 3600, m = seconds / 60 % 60, s = seconds % 60;
  if (h > 0)
    std::snprintf(text, sizeof text, s ? "%lldh%02lldm%02llds" : "%lldh%02lldm", static_cast<long long>(h),
                  static_cast<long long>(m), static_cast<long long>(s));
  else if (m > 0)
    std::snprintf(text, sizeof text, "%lldm%02llds", static_cast<long long>(m), static_cast<long long>(s));
  else
    std::snprintf(text, sizeof text, "%llds", static_cast<long long>(s));
  return text;
}

}  // namespace headroom
