// Pure parsers for the kernel's memory-related text files: meminfo, "key value" stat files, cgroup
// limits, PSI, /proc/self/cgroup and mountinfo. No I/O here, so every format quirk is unit-testable.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

// A cgroup limit that is not set ("max", or v1's page-rounded 2^63).
inline constexpr uint64_t kUnlimitedBytes = UINT64_MAX;

// "MemAvailable:   24453888 kB" -> bytes.
std::optional<uint64_t> ParseMeminfoBytes(std::string_view text, std::string_view key);
// Files of "key value" lines (memory.stat, memory.events, memory.oom_control, /proc/vmstat).
std::optional<uint64_t> ParseKeyedValue(std::string_view text, std::string_view key);
// A file holding one decimal number (memory.current, memory.usage_in_bytes, memory.peak).
std::optional<uint64_t> ParseSingleNumber(std::string_view text);
// memory.max / memory.high / memory.limit_in_bytes: bytes, or kUnlimitedBytes for "max" and for
// v1's "no limit" (any value at or above 2^62: the kernel prints 2^63 rounded down to a page).
std::optional<uint64_t> ParseCgroupLimit(std::string_view text);

struct PsiLine {
  double avg10 = 0.0;
  uint64_t total_us = 0;
};
struct PsiSnapshot {
  PsiLine some;
  PsiLine full;
};
// "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull ..." (the "full" line is optional).
std::optional<PsiSnapshot> ParsePsi(std::string_view text);

// One line of /proc/self/cgroup: "4:memory:/a/b" (v1) or "0::/a/b" (v2).
struct CgroupMembership {
  int hierarchy_id = -1;
  std::vector<std::string> controllers;
  std::string path;
};
std::vector<CgroupMembership> ParseProcSelfCgroup(std::string_view text);

// A cgroup or cgroup2 mount from /proc/self/mountinfo.
struct CgroupMount {
  std::string root;         // field 4: the cgroup the mount shows as its top (not "/" in some containers)
  std::string mount_point;  // field 5, octal escapes undone
  bool is_v2 = false;
  std::vector<std::string> super_options;  // v1 lists its controllers here ("rw,memory")
};
std::vector<CgroupMount> ParseCgroupMounts(std::string_view mountinfo);

}  // namespace headroom
