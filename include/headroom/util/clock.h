// The clock seam: monotonic time for durations and scheduling, replaceable by a fake in tests.
#pragma once

#include <cstdint>

namespace headroom {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic milliseconds since an arbitrary origin.
  virtual int64_t NowMs() const = 0;
};

class SteadyClock : public Clock {
 public:
  int64_t NowMs() const override;
};

}  // namespace headroom
