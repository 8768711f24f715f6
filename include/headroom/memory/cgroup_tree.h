// Walking and rearranging cgroup directories headroom made: their processes and child groups, moving processes
// between groups, removing emptied subtrees, sweeping per-build groups of dead builds, and a lock on a group.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

// Names headroom gives its cgroups under a build's own cgroup (docs/build-guard.md).
inline constexpr std::string_view kSharedGuardGroupName = "headroom.guard";  // capped once, builds inside it
inline constexpr std::string_view kBuildGroupPrefix = "headroom-";           // "headroom-<pid>": one build
inline constexpr std::string_view kLeafGroupName = "headroom.leaf";          // v2: processes moved out of a parent
inline constexpr std::string_view kLegacyLeafGroupName = "headroom.self";    // v2: the leaf's earlier name

// The processes of one group (cgroup.procs; none when it cannot be read).
std::vector<pid_t> CgroupPids(const std::string& dir);
// The child groups of a group, and the processes of a group and every group below it.
std::vector<std::string> CgroupChildren(const std::string& dir);
std::vector<pid_t> CgroupTreePids(const std::string& dir);
// Whether `dir` has child groups, from its link count (cgroupfs keeps 2 + its subdirectories there): one stat where
// CgroupChildren lists the directory. true when it cannot tell (the caller then lists).
bool MayHaveChildCgroups(const std::string& dir);

// Moves every process of `from` and of every group below it into `to`, pass after pass until a pass finds none:
// a process that forks while it is moved leaves its child where it was (fork and migration exclude each other in
// the kernel, so the child is born either before the move, and found by the next pass, or in `to`). Gives up
// after a bounded number of passes (a process forking without end) with *err. A process that exits meanwhile
// cannot be moved and is no error.
bool MoveCgroupTreeProcesses(const std::string& from, const std::string& to, std::string* err);

// Removes `dir` and every group below it, deepest first. false when something could not go (a group that still
// holds a process); what could go is gone.
bool RemoveCgroupTree(const std::string& dir);

// "headroom-<pid>" -> pid; nullopt for any other name.
std::optional<pid_t> BuildGroupPid(std::string_view name);
// Whether the process `pid` exists (a pid of another user counts: kill() says EPERM, not ESRCH).
bool ProcessAlive(pid_t pid);
// Removes the per-build groups ("headroom-<pid>") directly under `dir` whose build process is gone and that hold
// no process any more: what a build killed before it could clean up (SIGKILL without a watcher) leaves behind.
// A group whose pid is alive stays, whatever that process is now (pid reuse only delays the sweep).
// Returns how many it removed.
int SweepStaleBuildGroups(const std::string& dir);

// v2: undoes a headroom leaf of `home` that nothing needs any more, leaving the cgroup as it was before a build moved
// processes into it: when <home>/headroom.leaf holds no process but this one and nothing else was made beside it,
// the memory controller is handed back ("-memory"), this process moves back into home, and the leaf goes. false when
// anything of that could not be done (the leaf then stays, harmless: a normal child cgroup).
bool UndoUnusedLeafV2(const std::string& home);

// An exclusive flock(2) on a cgroup directory: cgroupfs holds no regular files, but a directory's descriptor can
// be locked, and every process that sees the group (a container's cgroup namespace included) locks the same
// inode. Released by Unlock, by closing, and by the kernel when the holder dies.
class CgroupDirLock {
 public:
  CgroupDirLock() = default;
  explicit CgroupDirLock(const std::string& dir);
  ~CgroupDirLock();
  CgroupDirLock(CgroupDirLock&& other) noexcept;
  CgroupDirLock& operator=(CgroupDirLock&& other) noexcept;

  bool TryLock();                  // at once or not at all
  bool Lock(int timeout_ms);       // waits up to timeout_ms; false (unlocked) after that
  void Unlock();
  bool held() const { return held_; }
  bool usable() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
  bool held_ = false;
};

}  // namespace headroom
