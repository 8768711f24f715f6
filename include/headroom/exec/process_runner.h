// The process seam: starts job commands (/bin/sh -c, own process group, stdin /dev/null,
// stdout+stderr captured through one pipe), waits for them, and signals their whole process group.
// The memory monitor and the safety net act on jobs through JobId, pid and process group.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace headroom {

class PreparedLaunch;
using JobId = int;

struct JobStartOptions {
  // Console jobs inherit headroom's stdin/stdout/stderr and process group (the terminal is theirs).
  bool use_console = false;
  // When non-empty, the child moves itself into this cgroup directory (writes to its cgroup.procs)
  // before exec, so the whole tree is accounted from its first byte.
  std::string cgroup_dir;
  // Variables set for this job only ("NAME=value"), replacing inherited ones of the same name (the
  // jobserver's MAKEFLAGS). Empty: the job gets headroom's environment unchanged.
  std::vector<std::string> environment;
  // One of headroom's close-on-exec descriptors that this job alone inherits, at the same number
  // (a jobserver channel offered as a pipe pair); -1 for none.
  int inherit_fd = -1;
  // A child already waiting in cgroup_dir (prepared_launch.h): the job is handed to it when it can take it (not a
  // console job, no inherit_fd); otherwise it is discarded and the job joins cgroup_dir itself. Owned by the caller.
  PreparedLaunch* prepared = nullptr;
};

struct JobExit {
  JobId id = -1;
  pid_t pid = -1;
  bool exited_normally = false;  // WIFEXITED
  int exit_code = 0;             // WEXITSTATUS when exited normally
  int term_signal = 0;           // WTERMSIG when killed by a signal
  std::string output;            // stdout+stderr, interleaved as written
  int64_t max_rss_kb = 0;        // wait4's ru_maxrss: the largest single process of the tree
  int64_t user_cpu_ms = 0;
  int64_t system_cpu_ms = 0;
  int64_t wall_ms = 0;

  bool success() const { return exited_normally && exit_code == 0; }
  // ninja 1.13 semantics: the exit code, or 128+signal.
  int ExitStatusCode() const { return exited_normally ? exit_code : 128 + term_signal; }
};

class ProcessRunner {
 public:
  enum class WaitResult { kJobsFinished, kTimeout, kInterrupted };

  virtual ~ProcessRunner() = default;
  // Returns the new job's id, or -1 with *err set.
  virtual JobId Start(const std::string& command, const JobStartOptions& options, std::string* err) = 0;
  // Waits up to timeout_ms (-1 = forever) for jobs to finish; appends every finished job.
  // Returns kInterrupted when SIGINT/SIGTERM/SIGHUP arrived (see interrupt_signal()).
  virtual WaitResult Wait(int timeout_ms, std::vector<JobExit>* finished) = 0;
  virtual pid_t PidOf(JobId id) const = 0;
  virtual pid_t ProcessGroupOf(JobId id) const = 0;
  // Sends `sig` to the job's process group (SIGSTOP/SIGCONT/SIGKILL for the safety net).
  virtual bool SignalJob(JobId id, int sig) = 0;
  // Signals every running job's process group with `sig` and reaps them all.
  virtual void AbortAll(int sig) = 0;
  virtual size_t running_count() const = 0;
  // The signal that interrupted the build, 0 if none.
  virtual int interrupt_signal() const = 0;
};

// Real implementation on Linux (pipes, ppoll, posix_spawn or fork when joining a cgroup).
std::unique_ptr<ProcessRunner> MakePosixProcessRunner();

}  // namespace headroom
