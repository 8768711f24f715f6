// Owns SpawnResident: a child that joins one cgroup once and stays in it, cloning each child headroom asks for there
// as headroom's own child (CLONE_PARENT), so those children are born in the cgroup and never join it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

namespace headroom {

// On cgroup v1 a process is born in a cgroup only when something inside it forks, and joining one later takes the
// kernel's cgroup locks, which every fork and exit on the machine then waits for. A resident stays in a recycled job
// cgroup while the build runs and clones that cgroup's prepared children (PreparedLaunch) there, so a recycled cgroup
// costs its jobs no join at all. It shares headroom's memory and descriptor table, blocks every signal, makes only
// raw system calls, and dies with headroom (PR_SET_PDEATHSIG).
class SpawnResident {
 public:
  // The name a resident, and a child it cloned until that child's exec, shows in /proc/PID/stat: scans that date a
  // job by its processes leave it out.
  static constexpr const char* kProcessName = "headroom-spawn";

  // One clone: `entry(arg)` on the stack ending at `stack_top`. The kernel writes the child's pid to *pid_word at the
  // clone (CLONE_PARENT_SETTID), before the child runs; a failed clone writes -errno there. `close_after` are
  // headroom's copies of descriptors the child needs: the resident closes them once the child holds its own (or the
  // clone failed), so headroom sees EOF on them when the child ends.
  struct Request {
    int (*entry)(void*) = nullptr;
    void* arg = nullptr;
    void* stack_top = nullptr;
    int* pid_word = nullptr;
    int* clear_word = nullptr;  // cleared by the kernel at the child's exec or exit (CLONE_CHILD_CLEARTID); or null
    int close_after[2] = {-1, -1};
  };

  // Starts the resident; it joins `cgroup_dir` on its own, so this does not wait for the join. nullptr with *err
  // when it cannot be started. A resident that cannot join fails every request instead (-errno of the join).
  static std::unique_ptr<SpawnResident> Start(const std::string& cgroup_dir, std::string* err);
  // Kills and reaps it.
  ~SpawnResident();
  SpawnResident(const SpawnResident&) = delete;
  SpawnResident& operator=(const SpawnResident&) = delete;

  pid_t pid() const { return pid_; }
  // Whether it is still there: a word the kernel clears at its exit (CLONE_CHILD_CLEARTID), no system call.
  bool Alive() const;
  // Hands it a clone to make (waiting first for an earlier one to be served) and sets *ticket to the request's
  // number. false when the resident is gone: the caller then still owns the request's descriptors.
  bool Post(const Request& request, uint32_t* ticket);
  // Whether request number `ticket` has been served.
  bool Served(uint32_t ticket) const;
  // Waits until request `ticket` is served, or the resident is gone. When it is gone first, closes what the request
  // still had open (it cannot be served any more) and returns false.
  bool WaitServed(uint32_t ticket);

  struct Shared;  // what the resident reads and writes in headroom's memory

 private:
  SpawnResident() = default;

  std::unique_ptr<Shared> shared_;
  void* stack_ = nullptr;
  pid_t pid_ = -1;
};

}  // namespace headroom
