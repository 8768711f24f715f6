// libFuzzer target: the /proc and cgroup text parsers (meminfo, keyed stats, limits, PSI, cgroup membership,
// mountinfo, /proc/PID/stat and statm) on arbitrary text, and cgroup discovery mapping membership onto mounts.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "headroom/memory/cgroup_layout.h"
#include "headroom/memory/memory_parsers.h"
#include "headroom/memory/process_group_sampler.h"

namespace {

void ParseAsEveryKernelFile(std::string_view text) {
  headroom::ParseMeminfoBytes(text, "MemAvailable");
  headroom::ParseMeminfoBytes(text, "MemTotal");
  headroom::ParseKeyedValue(text, "anon");
  headroom::ParseKeyedValue(text, "oom_kill");
  headroom::ParseSingleNumber(text);
  headroom::ParseCgroupLimit(text);
  headroom::ParsePsi(text);
  headroom::ParseProcSelfCgroup(text);
  headroom::ParseCgroupMounts(text);
  headroom::ParseStatProcessGroup(text);
  headroom::ParseStatmResidentPages(text);
}

// The same text serves as both /proc/self/cgroup and mountinfo: each parser skips the other's lines, so
// one input (the seeds mix both) drives the mapping of memberships onto mounts, including paths with "..".
void DiscoverFrom(const uint8_t* data, size_t size) {
  static headroom_fuzz::ScratchProcRoot proc_root("root");
  proc_root.WriteSelf("cgroup", data, size);
  proc_root.WriteSelf("mountinfo", data, size);
  std::vector<std::string> warnings;
  headroom::CgroupLayout layout = headroom::DiscoverCgroups(proc_root.root(), &warnings);
  headroom::DirsUpToMount(layout.memory_dir, layout.memory_mount_point);
  headroom::DirsUpToMount(layout.v2_dir, layout.v2_mount_point);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ParseAsEveryKernelFile(std::string_view(reinterpret_cast<const char*>(data), size));
  DiscoverFrom(data, size);
  return 0;
}
