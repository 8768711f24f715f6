// PressureWindow: a short PSI window computed from deltas of the cumulative stall counters.
#include "headroom/memory/pressure_window.h"

#include <algorithm>

namespace headroom {

namespace {

double StalledPercent(uint64_t from_us, uint64_t to_us, int64_t span_ms) {
  if (to_us < from_us || span_ms <= 0) return 0.0;
  double percent = static_cast<double>(to_us - from_us) / (static_cast<double>(span_ms) * 1000.0) * 100.0;
  return std::clamp(percent, 0.0, 100.0);
}

}  // namespace

PressureWindow::Percent PressureWindow::Add(int64_t now_ms, const PsiSnapshot& snapshot) {
  // A clock or counter going backwards (restarted source) invalidates the history.
  if (!samples_.empty() && (now_ms < samples_.back().at_ms || snapshot.some.total_us < samples_.back().some_us)) {
    samples_.clear();
  }
  samples_.push_back({now_ms, snapshot.some.total_us, snapshot.full.total_us});
  // Keep as base the newest sample that is at least a window old, dropping the ones before it.
  while (samples_.size() >= 2 && samples_[1].at_ms <= now_ms - window_ms_) samples_.pop_front();

  const Sample& base = samples_.front();
  int64_t span_ms = now_ms - base.at_ms;
  if (span_ms >= min_span_ms_) {
    last_.some = StalledPercent(base.some_us, snapshot.some.total_us, span_ms);
    last_.full = StalledPercent(base.full_us, snapshot.full.total_us, span_ms);
    have_last_ = true;
  } else if (!have_last_) {
    last_.some = snapshot.some.avg10;
    last_.full = snapshot.full.avg10;
  }
  return last_;
}

}  // namespace headroom
