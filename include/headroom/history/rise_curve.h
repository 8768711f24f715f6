// How a job's memory rises over its run: for a few levels (shares of its peak), the share of its duration during
// which it stayed below each. Recorded from a job's samples, kept with each run in the history, and read by
// admission to count a ramping job by what it will hold when a shorter job beside it ends.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

struct RiseCurve {
  // The levels, as shares of the job's peak. Four bytes: the curve fits in a HistoryRecord's padding.
  static constexpr std::array<double, 4> kLevels = {0.25, 0.50, 0.75, 0.90};
  static constexpr int kScale = 255;  // `below` is a share of the duration in 1/255ths
  // below[i]: the job held less than kLevels[i] of its peak for the first below[i]/255 of its run. All zero:
  // unknown (nothing was seen below any level, or it was never sampled): it may hold its peak at once.
  std::array<uint8_t, kLevels.size()> below{};

  bool known() const { return below.back() != 0 || below.front() != 0; }
  // The share of its peak the job may hold at `time_share` of its duration (0 = start, 1 = end): the first
  // level it had not yet been seen to reach then, or 1 once past them all.
  double BoundAt(double time_share) const;
  // The faster rise of two (each level's smaller share): what a job with either history may do.
  static RiseCurve Faster(const RiseCurve& a, const RiseCurve& b);
  bool operator==(const RiseCurve& other) const = default;

  // "64/128/191/230", or "-" when unknown: the history files' field.
  std::string Format() const;
  // Reads what Format writes; false for anything else.
  static bool Parse(std::string_view text, RiseCurve* curve);
};

// Builds a RiseCurve from a job's samples: the running maximum of its memory at each sample, kept only where it
// grew (a few hundred points at most for any job), then read against the final peak and duration.
class RiseRecorder {
 public:
  // `bytes` sampled `elapsed_ms` after the job started; samples come in time order.
  void Sample(int64_t elapsed_ms, uint64_t bytes);
  // The curve for a run that peaked at `peak_bytes` (the exact peak when known; the samples' maximum else) and
  // lasted `duration_ms`. Each level's share is the last sample still below it: the memory crossed the level
  // after that sample, so the curve never claims the job stayed low longer than it did.
  RiseCurve Finish(uint64_t peak_bytes, int64_t duration_ms) const;

 private:
  // Growth by less than this share of the maximum so far joins the last point instead of making a new one, so
  // an hour-long job sampled every 200 ms keeps a few hundred points, not 18,000.
  static constexpr double kNewPointGrowth = 0.01;
  struct Point {
    int64_t before_ms;   // the sample before the one that opened this point: all samples until then were lower
    uint64_t max_bytes;  // the largest sample from the one that opened it until the next point
  };
  std::vector<Point> points_;  // max_bytes increases
  int64_t last_sample_ms_ = 0;
};

}  // namespace headroom
