// Memory PSI over a short window of our own choosing, from deltas of the kernel's cumulative
// stall counters ("total=" in µs): avg10 lags too much to stop admissions in time.
#pragma once

#include <cstdint>
#include <deque>

#include "headroom/memory/memory_parsers.h"

namespace headroom {

class PressureWindow {
 public:
  // window_ms: how far back the delta reaches. min_span_ms: shorter spans are too noisy to use (reads
  // are re-taken after each admission in the same tick), so the previous figure is kept instead.
  PressureWindow(int64_t window_ms, int64_t min_span_ms) : window_ms_(window_ms), min_span_ms_(min_span_ms) {}

  struct Percent {
    double some = 0.0;
    double full = 0.0;
  };
  // Adds a reading taken at now_ms and returns the stalled share of wall time over the window. Until two
  // readings are far enough apart it reports the kernel's avg10.
  Percent Add(int64_t now_ms, const PsiSnapshot& snapshot);

 private:
  struct Sample {
    int64_t at_ms;
    uint64_t some_us;
    uint64_t full_us;
  };

  int64_t window_ms_;
  int64_t min_span_ms_;
  std::deque<Sample> samples_;
  Percent last_;
  bool have_last_ = false;
};

}  // namespace headroom
