// RiseCurve: levels of a job's peak and how long it stayed below each; RiseRecorder builds one from samples.
#include "headroom/history/rise_curve.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

namespace headroom {

double RiseCurve::BoundAt(double time_share) const {
  if (!known()) return 1.0;
  for (size_t i = 0; i < kLevels.size(); ++i) {
    if (time_share < static_cast<double>(below[i]) / kScale) return kLevels[i];
  }
  return 1.0;
}

RiseCurve RiseCurve::Faster(const RiseCurve& a, const RiseCurve& b) {
  if (!a.known()) return a;
  if (!b.known()) return b;
  RiseCurve out;
  for (size_t i = 0; i < kLevels.size(); ++i) out.below[i] = std::min(a.below[i], b.below[i]);
  return out;
}

std::string RiseCurve::Format() const {
  if (!known()) return "-";
  return fmt::format("{}/{}/{}/{}", below[0], below[1], below[2], below[3]);
}

bool RiseCurve::Parse(std::string_view text, RiseCurve* curve) {
  *curve = RiseCurve{};
  if (text == "-") return true;
  for (size_t i = 0; i < kLevels.size(); ++i) {
    size_t end = i + 1 < kLevels.size() ? text.find('/') : text.size();
    if (end == std::string_view::npos || end == 0) return false;
    unsigned value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + end, value);
    if (ec != std::errc() || ptr != text.data() + end || value > static_cast<unsigned>(kScale)) return false;
    curve->below[i] = static_cast<uint8_t>(value);
    text.remove_prefix(std::min(text.size(), end + 1));
  }
  // Shares cannot fall as the levels rise; a curve that says so was not written by headroom.
  return std::is_sorted(curve->below.begin(), curve->below.end());
}

void RiseRecorder::Sample(int64_t elapsed_ms, uint64_t bytes) {
  const uint64_t max_so_far = points_.empty() ? 0 : points_.back().max_bytes;
  if (bytes > max_so_far) {
    if (!points_.empty() && static_cast<double>(bytes - max_so_far) < kNewPointGrowth * static_cast<double>(max_so_far)) {
      points_.back().max_bytes = bytes;
    } else {
      points_.push_back({last_sample_ms_, bytes});
    }
  }
  last_sample_ms_ = std::max(last_sample_ms_, elapsed_ms);
}

RiseCurve RiseRecorder::Finish(uint64_t peak_bytes, int64_t duration_ms) const {
  RiseCurve curve;
  if (duration_ms <= 0 || peak_bytes == 0) return curve;
  for (size_t i = 0; i < RiseCurve::kLevels.size(); ++i) {
    const auto level = static_cast<uint64_t>(RiseCurve::kLevels[i] * static_cast<double>(peak_bytes));
    auto reached = std::find_if(points_.begin(), points_.end(), [&](const Point& p) { return p.max_bytes >= level; });
    // Never seen at the level: the exact peak came between two samples. Where is unknown; most likely while the
    // job was still growing, so the level counts as reached where its samples last grew.
    const int64_t below_ms = reached != points_.end() ? reached->before_ms
                             : points_.empty()        ? 0
                                                      : points_.back().before_ms;
    const double share = std::clamp(static_cast<double>(below_ms) / static_cast<double>(duration_ms), 0.0, 1.0);
    curve.below[i] = static_cast<uint8_t>(share * RiseCurve::kScale);  // rounded down: never later than seen
  }
  return curve;
}

}  // namespace headroom
