// Cgroup discovery from /proc/self/cgroup and mountinfo for v1, v2, hybrid and namespaced containers.
#include "headroom/memory/cgroup_layout.h"

#include <sys/stat.h>

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "headroom/memory/kernel_file.h"
#include "headroom/memory/memory_parsers.h"

namespace headroom {

namespace {

bool HasController(const std::vector<std::string>& list, const std::string& name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

bool IsPathUnder(const std::string& path, const std::string& prefix) {
  if (prefix == "/") return true;
  return path == prefix || (path.starts_with(prefix) && path[prefix.size()] == '/');
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

struct Located {
  std::string dir;
  std::string mount_point;
};

// Maps a /proc/self/cgroup path onto a mount. Normally the mount root is a prefix of the path and is
// cut off. Inside a cgroup namespace the path is relative to the namespace root, which is what the
// mount shows as its top even though mountinfo's root field names the host-side cgroup (or "/.."):
// then the path is taken relative to the mount point itself.
std::optional<Located> Locate(const std::string& root_prefix, const std::string& cgroup_path,
                              const std::vector<const CgroupMount*>& mounts) {
  if (mounts.empty()) return std::nullopt;
  const CgroupMount* chosen = nullptr;
  for (const CgroupMount* mount : mounts) {
    if (IsPathUnder(cgroup_path, mount->root) &&
        (chosen == nullptr || mount->root.size() > chosen->root.size())) {
      chosen = mount;
    }
  }
  std::string relative;
  if (chosen != nullptr) {
    relative = chosen->root == "/" ? cgroup_path : cgroup_path.substr(chosen->root.size());
  } else {
    chosen = mounts.front();
    relative = cgroup_path;
  }
  if (relative == "/") relative.clear();
  std::string mount_point = root_prefix + chosen->mount_point;
  return Located{mount_point + relative, mount_point};
}

std::vector<const CgroupMount*> MountsWhere(const std::vector<CgroupMount>& mounts, bool v2,
                                            const std::string& controller) {
  std::vector<const CgroupMount*> found;
  for (const CgroupMount& mount : mounts) {
    if (mount.is_v2 != v2) continue;
    if (!v2 && !HasController(mount.super_options, controller)) continue;
    found.push_back(&mount);
  }
  return found;
}

// The unified tree accounts memory for us only when its memory controller reaches our cgroup
// (on hybrid hosts it is bound to v1 and absent here).
bool V2HasMemory(const std::string& dir) {
  std::string controllers;
  std::string err;
  if (!ReadWholeFile(dir + "/cgroup.controllers", &controllers, &err)) return false;
  return controllers.find("memory") != std::string::npos;
}

}  // namespace

CgroupLayout DiscoverCgroups(const std::string& root, std::vector<std::string>* warnings) {
  CgroupLayout layout;
  std::string self_cgroup, mountinfo, err;
  if (!ReadWholeFile(root + "/proc/self/cgroup", &self_cgroup, &err) ||
      !ReadWholeFile(root + "/proc/self/mountinfo", &mountinfo, &err)) {
    warnings->push_back(fmt::format("cgroups not used: {}", err));
    return layout;
  }
  std::vector<CgroupMount> mounts = ParseCgroupMounts(mountinfo);
  std::optional<Located> v1_memory, v1_freezer, v2;
  for (const CgroupMembership& membership : ParseProcSelfCgroup(self_cgroup)) {
    if (membership.hierarchy_id == 0 && membership.controllers.empty()) {
      v2 = Locate(root, membership.path, MountsWhere(mounts, true, ""));
    } else {
      if (HasController(membership.controllers, "memory")) {
        v1_memory = Locate(root, membership.path, MountsWhere(mounts, false, "memory"));
      }
      if (HasController(membership.controllers, "freezer")) {
        v1_freezer = Locate(root, membership.path, MountsWhere(mounts, false, "freezer"));
      }
    }
  }
  if (v2 && IsDirectory(v2->dir)) {
    layout.v2_dir = v2->dir;
    layout.v2_mount_point = v2->mount_point;
  }
  if (v1_freezer && IsDirectory(v1_freezer->dir)) {
    layout.v1_freezer_dir = v1_freezer->dir;
    layout.v1_freezer_mount_point = v1_freezer->mount_point;
  }
  // A v1 memory hierarchy wins: on hybrid hosts the unified tree then has no memory controller.
  if (v1_memory && IsDirectory(v1_memory->dir)) {
    layout.memory_version = CgroupVersion::kV1;
    layout.memory_dir = v1_memory->dir;
    layout.memory_mount_point = v1_memory->mount_point;
  } else if (!layout.v2_dir.empty() && V2HasMemory(layout.v2_dir)) {
    layout.memory_version = CgroupVersion::kV2;
    layout.memory_dir = layout.v2_dir;
    layout.memory_mount_point = layout.v2_mount_point;
  } else if (v1_memory || v2) {
    warnings->push_back("no cgroup memory controller found for this process; using /proc/meminfo only");
  }
  return layout;
}

std::vector<std::string> DirsUpToMount(const std::string& dir, const std::string& mount_point) {
  std::vector<std::string> dirs;
  std::string current = dir;
  while (!current.empty()) {
    dirs.push_back(current);
    if (current == mount_point || current.size() <= mount_point.size()) break;
    size_t slash = current.rfind('/');
    if (slash == std::string::npos || slash == 0) break;
    current = current.substr(0, slash);
  }
  return dirs;
}

std::string CgroupPathInHierarchy(const std::string& dir, const std::string& mount_point) {
  std::string_view top = mount_point;
  while (!top.empty() && top.back() == '/') top.remove_suffix(1);
  std::string_view path = dir;
  if (path.substr(0, top.size()) != top) return "";
  path.remove_prefix(top.size());
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  if (path.empty()) return "/";
  if (path.front() != '/') return "";  // "<mount>x": a sibling of the mount point, not below it
  return std::string(path);
}

bool CgroupPathWithin(const std::string& inner, const std::string& outer) {
  if (outer.empty() || inner.empty()) return false;
  if (outer == "/") return inner.front() == '/';
  if (inner.compare(0, outer.size(), outer) != 0) return false;
  return inner.size() == outer.size() || inner[outer.size()] == '/';
}

}  // namespace headroom
