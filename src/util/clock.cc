// Monotonic clock used for job durations and the scheduler's ticks.
#include "headroom/util/clock.h"

#include <chrono>

namespace headroom {

int64_t SteadyClock::NowMs() const {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace headroom
