// Discovery of this process's cgroups: which hierarchy accounts memory (v1, v2 or none), the own
// directory in it, and where the walk up its ancestors must stop. Done once per build.
#pragma once

#include <string>
#include <vector>

namespace headroom {

enum class CgroupVersion { kNone, kV1, kV2 };

// All directories carry the probe's root prefix, so they are real paths (a temp tree in tests).
struct CgroupLayout {
  CgroupVersion memory_version = CgroupVersion::kNone;
  std::string memory_dir;          // own cgroup in the hierarchy that accounts memory
  std::string memory_mount_point;  // the top of that hierarchy as seen here; ancestors stop at it
  std::string v2_dir;              // own cgroup in the unified tree (PSI, freeze), with or without memory
  std::string v2_mount_point;
  std::string v1_freezer_dir;      // own cgroup in a separate v1 freezer hierarchy, if mounted
  std::string v1_freezer_mount_point;
};

// Reads <root>/proc/self/cgroup and <root>/proc/self/mountinfo. Problems are appended to *warnings;
// the result then has memory_version == kNone (callers fall back to /proc/meminfo and /proc sampling).
CgroupLayout DiscoverCgroups(const std::string& root, std::vector<std::string>* warnings);

// A cgroup directory as a path inside its hierarchy, as /proc/<pid>/cgroup shows it: "/box/sub" for
// "<mount_point>/box/sub", "/" for the mount point itself; "" when dir is not below mount_point.
std::string CgroupPathInHierarchy(const std::string& dir, const std::string& mount_point);

// Whether cgroup path `inner` ("/box/sub") is `outer` ("/box") or below it; "/" contains every path.
bool CgroupPathWithin(const std::string& inner, const std::string& outer);

// The own directory first, then each parent, up to and including mount_point.
std::vector<std::string> DirsUpToMount(const std::string& dir, const std::string& mount_point);

}  // namespace headroom
