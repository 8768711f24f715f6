// HEADROOM_TEST_CPUS: a test-only override of the CPU count headroom computes (docs/benchmarks.md, "Scale rig"), so
// a small machine can run the scheduler as a many-core one would. Read wherever the CPU count is computed.
#pragma once

#include <cstdlib>

namespace headroom {

inline constexpr int kMaxTestCpus = 4096;

// The CPU count HEADROOM_TEST_CPUS names (a whole number 1..kMaxTestCpus), or 0 when it is unset or not one:
// callers then compute the real count. Not for production use: jobs still share the real CPUs.
inline int TestCpusOverride() {
  const char* text = std::getenv("HEADROOM_TEST_CPUS");
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  const long cpus = std::strtol(text, &end, 10);
  return *end == '\0' && cpus >= 1 && cpus <= kMaxTestCpus ? static_cast<int>(cpus) : 0;
}

}  // namespace headroom
