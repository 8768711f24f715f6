// libFuzzer target: the /proc and cgroup text parsers (meminfo, keyed stats, limits, PSI, cgroup
// membership, mountinfo) on arbitrary text.
#include <cstdint>
#include <string_view>

#include "headroom/memory/memory_parsers.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  headroom::ParseMeminfoBytes(text, "MemAvailable");
  headroom::ParseMeminfoBytes(text, "MemTotal");
  headroom::ParseKeyedValue(text, "anon");
  headroom::ParseKeyedValue(text, "oom_kill");
  headroom::ParseSingleNumber(text);
  headroom::ParseCgroupLimit(text);
  headroom::ParsePsi(text);
  headroom::ParseProcSelfCgroup(text);
  headroom::ParseCgroupMounts(text);
  return 0;
}
