// Small text helpers shared by the summary, the trace and the HTML report: durations, clock times,
// byte sizes for axes, HTML escaping, "nice" axis ticks and writing a whole file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

// "250ms", "3.4s", "1m12s", "1h02m".
std::string FormatDuration(int64_t ms);
// A point on a time axis: "m:ss" or "h:mm:ss"; with tenths "m:ss.t" (for builds of a few seconds).
std::string FormatClock(int64_t ms, bool tenths = false);
// A byte count in a fixed unit (for axes, where every label shares one unit): "1.5" for 1.5 GiB.
std::string FormatInUnit(uint64_t bytes, uint64_t unit);
// The unit an axis up to `max_bytes` reads best in: 1 GiB from 1 GiB up, else 1 MiB.
uint64_t AxisUnit(uint64_t max_bytes);
const char* AxisUnitName(uint64_t unit);  // "GiB" / "MiB"
// Percent error of an estimate against the measured value: +25 means it guessed 25% too high.
double EstimateErrorPct(uint64_t estimate, uint64_t actual);

std::string HtmlEscape(std::string_view text);

// Round tick positions from 0 up to at least `max`, about `target` of them (1/2/5 x 10^n steps).
std::vector<double> NiceTicks(double max, int target);
// Tick step in ms for a time axis of `span_ms`, on clock-friendly steps (1s, 5s, 15s, 1m, ...).
int64_t TimeTickStep(int64_t span_ms, int target);

// Writes `content` to `path` (replacing it). false with *err = strerror text on failure.
bool WriteOutputFile(const std::string& path, const std::string& content, std::string* err);

}  // namespace headroom
