// Cgroup directory walks and rearrangements: processes of a subtree, moves between groups, removal of emptied
// subtrees, the sweep of dead builds' groups, and the flock on a group directory.
#include "headroom/memory/cgroup_tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <utility>

#include <fmt/format.h>

#include "headroom/memory/kernel_file.h"
#include "headroom/memory/memory_parsers.h"

namespace headroom {

std::vector<pid_t> CgroupPids(const std::string& dir) {
  std::string text, err;
  std::vector<pid_t> pids;
  if (!ReadWholeFile(dir + "/cgroup.procs", &text, &err)) return pids;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (auto pid = ParseSingleNumber(std::string_view(text).substr(start, end - start))) {
      pids.push_back(static_cast<pid_t>(*pid));
    }
    start = end + 1;
  }
  return pids;
}

std::vector<std::string> CgroupChildren(const std::string& dir) {
  std::vector<std::string> children;
  DIR* handle = opendir(dir.c_str());
  if (handle == nullptr) return children;
  while (dirent* entry = readdir(handle)) {
    if (entry->d_name[0] == '.' || entry->d_type != DT_DIR) continue;
    children.push_back(dir + "/" + entry->d_name);
  }
  closedir(handle);
  return children;
}

bool MayHaveChildCgroups(const std::string& dir) {
  struct stat st;
  return stat(dir.c_str(), &st) != 0 || st.st_nlink != 2;
}

std::vector<pid_t> CgroupTreePids(const std::string& dir) {
  std::vector<pid_t> pids = CgroupPids(dir);
  for (const std::string& child : CgroupChildren(dir)) {
    std::vector<pid_t> below = CgroupTreePids(child);
    pids.insert(pids.end(), below.begin(), below.end());
  }
  return pids;
}

bool MoveCgroupTreeProcesses(const std::string& from, const std::string& to, std::string* err) {
  constexpr int kMaxPasses = 100;
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    std::vector<pid_t> pids = CgroupTreePids(from);
    if (pids.empty()) return true;
    for (pid_t pid : pids) {
      std::string ignored;  // one that exited meanwhile cannot be moved; the next pass no longer lists it
      WriteWholeFile(to + "/cgroup.procs", std::to_string(pid), &ignored);
    }
  }
  *err = fmt::format("processes in {} kept forking faster than they could be moved to {}", from, to);
  return false;
}

bool RemoveCgroupTree(const std::string& dir) {
  bool all = true;
  for (const std::string& child : CgroupChildren(dir)) all = RemoveCgroupTree(child) && all;
  if (rmdir(dir.c_str()) != 0 && errno != ENOENT) return false;
  return all;
}

std::optional<pid_t> BuildGroupPid(std::string_view name) {
  if (!name.starts_with(kBuildGroupPrefix)) return std::nullopt;
  std::string_view digits = name.substr(kBuildGroupPrefix.size());
  pid_t pid = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
  if (ec != std::errc() || end != digits.data() + digits.size() || pid <= 0) return std::nullopt;
  return pid;
}

bool ProcessAlive(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH); }

int SweepStaleBuildGroups(const std::string& dir) {
  int removed = 0;
  for (const std::string& child : CgroupChildren(dir)) {
    std::optional<pid_t> pid = BuildGroupPid(std::string_view(child).substr(child.rfind('/') + 1));
    if (!pid || ProcessAlive(*pid) || !CgroupTreePids(child).empty()) continue;
    if (RemoveCgroupTree(child)) ++removed;
  }
  return removed;
}

bool UndoUnusedLeafV2(const std::string& home) {
  const std::string leaf = home + "/" + std::string(kLeafGroupName);
  const pid_t self = getpid();
  std::vector<pid_t> in_leaf = CgroupPids(leaf);
  if (access(leaf.c_str(), F_OK) != 0 || CgroupChildren(home) != std::vector<std::string>{leaf}) return false;
  for (pid_t pid : in_leaf) {
    if (pid != self) return false;
  }
  std::string ignored;
  if (!WriteWholeFile(home + "/cgroup.subtree_control", "-memory", &ignored)) return false;
  if (!in_leaf.empty() && !WriteWholeFile(home + "/cgroup.procs", std::to_string(self), &ignored)) return false;
  return rmdir(leaf.c_str()) == 0;
}

CgroupDirLock::CgroupDirLock(const std::string& dir)
    : fd_(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {}

CgroupDirLock::~CgroupDirLock() {
  if (fd_ >= 0) close(fd_);
}

CgroupDirLock::CgroupDirLock(CgroupDirLock&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), held_(std::exchange(other.held_, false)) {}

CgroupDirLock& CgroupDirLock::operator=(CgroupDirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    held_ = std::exchange(other.held_, false);
  }
  return *this;
}

bool CgroupDirLock::TryLock() {
  if (held_) return true;
  if (fd_ < 0) return false;
  int rc;
  do {
    rc = flock(fd_, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  held_ = rc == 0;
  return held_;
}

// Polls rather than blocks: a holder that never lets go (a stuck build) must not stop this one for ever.
bool CgroupDirLock::Lock(int timeout_ms) {
  constexpr int kStepMs = 5;
  for (int waited = 0;; waited += kStepMs) {
    if (TryLock()) return true;
    if (fd_ < 0 || waited >= timeout_ms) return false;
    usleep(kStepMs * 1000);
  }
}

void CgroupDirLock::Unlock() {
  if (!held_) return;
  flock(fd_, LOCK_UN);
  held_ = false;
}

}  // namespace headroom
