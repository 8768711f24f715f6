// Owns prepared launches: a child started ahead of its job (this executable in a waiting mode) that has already
// joined a cgroup and execs the job's command once handed it, so a job does not wait out the join at its start.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "headroom/exec/spawn_resident.h"

namespace headroom {

// Joining a cgroup (writing its cgroup.procs) waits for an RCU grace period, 7-14 ms on the machines measured
// (docs/memory-observation.md, "Launch latency"). Cgroup v2 avoids it with clone3(CLONE_INTO_CGROUP); on v1 the
// wait can only be moved off the job's start: a prepared child joins while its cgroup is still a spare. The child
// shares headroom's memory (nothing is copied or exec'd until the job's own exec) and makes only raw system calls.
class PreparedLaunch {
 public:
  // Whether this build can prepare launches (x86-64, not sanitized).
  static bool Supported();
  // Starts the child (own process group, stdin /dev/null, stdout and stderr on a fresh pipe): it joins `cgroup_dir`
  // and waits for its job. With a resident of that cgroup (alive, and outliving this launch), the resident clones it
  // there instead and it joins nothing. nullptr with *err when it cannot be started.
  static std::unique_ptr<PreparedLaunch> Start(const std::string& cgroup_dir, SpawnResident* resident,
                                               std::string* err);
  // Kills and reaps the child unless it was handed a job.
  ~PreparedLaunch();
  PreparedLaunch(const PreparedLaunch&) = delete;
  PreparedLaunch& operator=(const PreparedLaunch&) = delete;

  enum class State { kJoining, kReady, kFailed };
  // Where the child stands, after waiting up to timeout_ms for it to report (0: not at all).
  State Poll(int timeout_ms = 0);
  // Hands the job to the child: waits up to timeout_ms for it to be ready and lets it exec `/bin/sh -c command` with
  // the environment overrides ("NAME=value", as JobStartOptions::environment). It does not wait for that exec
  // (what the child still reads is kept until then), except for a command or environment large enough that the exec
  // may fail with E2BIG. Returns its pid (also its process group) with the read end of its output pipe in
  // *output_read_fd, or -1 with *err; the child is then gone and the job must be started another way (which
  // reports its own error if, say, the exec fails there too). An exec that fails later says why in the job's output,
  // and the job exits 127 as a shell's would.
  pid_t Hand(const std::string& command, const std::vector<std::string>& environment, int timeout_ms,
             int* output_read_fd, std::string* err);
  // Kills and reaps the child now: a cgroup that holds it can neither be removed nor given to a job started another
  // way.
  void Discard();

  struct ChildPlan;  // what the child reads from headroom's memory

 private:
  PreparedLaunch();
  bool WaitForReport(int timeout_ms);
  bool Spawn(SpawnResident* resident, int output_write_fd, std::string* err);
  void LearnPid();
  static bool ExecFailureIsLikely(const std::string& command, const std::vector<std::string>& environment);
  bool WaitForExec(std::string* err);
  void ReleaseStack();

  std::unique_ptr<ChildPlan> plan_;
  pid_t pid_ = -1;           // 0 while a resident has not yet cloned the child
  SpawnResident* resident_ = nullptr;  // the resident asked to clone the child, until it has
  uint32_t spawn_ticket_ = 0;
  int output_read_fd_ = -1;  // the job's stdout and stderr
  void* stack_ = nullptr;    // the top of the child's stack (child_stacks.h), until it has exec'd or is reaped
  State state_ = State::kJoining;
  std::string failure_;  // what the child reported when it could not get ready; "" if it said nothing
};

}  // namespace headroom
