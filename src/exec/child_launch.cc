// Implements LaunchChild: posix_spawn for ordinary jobs (fast, vfork-like), and fork + join the
// cgroup + exec for cgroup jobs, with a close-on-exec status pipe that reports child-side failures.
#include "child_launch.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "scoped_fd.h"

extern char** environ;

namespace headroom::exec_internal {
namespace {

constexpr const char* kShell = "/bin/sh";

// Signals whose disposition the child must not inherit: everything catchable goes back to default
// (an ignored SIGPIPE or SIGINT in headroom would otherwise leak into every build command).
sigset_t AllSignalsToDefault() {
  sigset_t set;
  sigfillset(&set);
  sigdelset(&set, SIGKILL);
  sigdelset(&set, SIGSTOP);
  return set;
}

struct ShellArgv {
  explicit ShellArgv(const std::string& command)
      : argv{const_cast<char*>(kShell), const_cast<char*>("-c"), const_cast<char*>(command.c_str()),
             nullptr} {}
  char* argv[4];
};

// ---- posix_spawn path -------------------------------------------------------------------------

pid_t SpawnDirect(const std::string& command, const JobStartOptions& options, int output_write_fd,
                  std::string* err) {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_init(&actions);

  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  sigset_t empty_mask;
  sigemptyset(&empty_mask);
  sigset_t to_default = AllSignalsToDefault();
  int setup_error = posix_spawnattr_setsigmask(&attr, &empty_mask);
  if (!setup_error) setup_error = posix_spawnattr_setsigdefault(&attr, &to_default);
  if (!options.use_console) {
    flags |= POSIX_SPAWN_SETPGROUP;
    if (!setup_error) setup_error = posix_spawnattr_setpgroup(&attr, 0);
    if (!setup_error) setup_error = posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    if (!setup_error) setup_error = posix_spawn_file_actions_adddup2(&actions, output_write_fd, 1);
    if (!setup_error) setup_error = posix_spawn_file_actions_adddup2(&actions, output_write_fd, 2);
  }
  if (!setup_error) setup_error = posix_spawnattr_setflags(&attr, flags);

  pid_t pid = -1;
  ShellArgv shell(command);
  int spawn_error = setup_error ? setup_error : posix_spawn(&pid, kShell, &actions, &attr, shell.argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (spawn_error) {
    *err = fmt::format("posix_spawn {}: {}", kShell, std::strerror(spawn_error));
    return -1;
  }
  return pid;
}

// ---- fork + cgroup path -----------------------------------------------------------------------

enum class ChildStage : int { kSetProcessGroup = 1, kJoinCgroup, kRedirectStdio, kExec };

struct ChildFailure {
  ChildStage stage;
  int error;
};

// Everything the forked child needs, prepared before fork: after fork only async-signal-safe
// calls are allowed (headroom may have other threads).
struct ForkedChildPlan {
  const char* cgroup_procs_path;
  bool use_console;
  int output_write_fd;
  int status_write_fd;
  char** argv;
};

[[noreturn]] void ReportAndExit(const ForkedChildPlan& plan, ChildStage stage) {
  ChildFailure failure{stage, errno};
  [[maybe_unused]] ssize_t ignored = ::write(plan.status_write_fd, &failure, sizeof failure);
  _exit(127);
}

void ResetSignalDispositions() {
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  // Invalid or reserved numbers (SIGKILL, SIGSTOP, libc-internal ones) just fail; that is fine.
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &default_action, nullptr);
}

bool JoinCgroup(const char* procs_path) {
  int fd = ::open(procs_path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // "0" means "the writing process" in both cgroup v1 and v2.
  bool joined = ::write(fd, "0", 1) == 1;
  int saved_errno = errno;
  ::close(fd);
  errno = saved_errno;
  return joined;
}

bool RedirectStdio(int output_write_fd) {
  int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd < 0) return false;
  if (null_fd != 0) {
    if (::dup2(null_fd, 0) < 0) return false;
    ::close(null_fd);
  }
  return ::dup2(output_write_fd, 1) >= 0 && ::dup2(output_write_fd, 2) >= 0;
}

[[noreturn]] void RunForkedChild(const ForkedChildPlan& plan) {
  // All signals are blocked here (the parent blocked them around fork), so no handler of
  // headroom's can run in the child before the dispositions are reset.
  ResetSignalDispositions();
  if (!plan.use_console && ::setpgid(0, 0) != 0) ReportAndExit(plan, ChildStage::kSetProcessGroup);
  if (!JoinCgroup(plan.cgroup_procs_path)) ReportAndExit(plan, ChildStage::kJoinCgroup);
  if (!plan.use_console && !RedirectStdio(plan.output_write_fd)) ReportAndExit(plan, ChildStage::kRedirectStdio);
  sigset_t empty_mask;
  sigemptyset(&empty_mask);
  sigprocmask(SIG_SETMASK, &empty_mask, nullptr);
  ::execve(kShell, plan.argv, environ);
  ReportAndExit(plan, ChildStage::kExec);
}

std::string DescribeChildFailure(const ChildFailure& failure, const std::string& cgroup_dir) {
  const char* reason = std::strerror(failure.error);
  switch (failure.stage) {
    case ChildStage::kSetProcessGroup: return fmt::format("setpgid in child: {}", reason);
    case ChildStage::kJoinCgroup: return fmt::format("cannot join cgroup '{}': {}", cgroup_dir, reason);
    case ChildStage::kRedirectStdio: return fmt::format("redirecting child stdio: {}", reason);
    case ChildStage::kExec: return fmt::format("exec {}: {}", kShell, reason);
  }
  return fmt::format("child setup failed: {}", reason);
}

void ReapFailedChild(pid_t pid) {
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

// Reads the status pipe until the child execs (EOF, nothing written) or reports a failure.
bool ReadChildFailure(int status_read_fd, ChildFailure* failure) {
  ssize_t n;
  do {
    n = ::read(status_read_fd, failure, sizeof *failure);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(sizeof *failure);
}

pid_t ForkIntoCgroup(const std::string& command, const JobStartOptions& options, int output_write_fd,
                     std::string* err) {
  int status_fds[2];
  if (::pipe2(status_fds, O_CLOEXEC) != 0) {
    *err = fmt::format("pipe: {}", std::strerror(errno));
    return -1;
  }
  ScopedFd status_read(MoveAboveStdio(status_fds[0]));
  ScopedFd status_write(MoveAboveStdio(status_fds[1]));
  if (!status_read.valid() || !status_write.valid()) {
    *err = fmt::format("fcntl: {}", std::strerror(errno));
    return -1;
  }

  std::string procs_path = options.cgroup_dir + "/cgroup.procs";
  ShellArgv shell(command);
  ForkedChildPlan plan{procs_path.c_str(), options.use_console, output_write_fd, status_write.get(), shell.argv};

  sigset_t all_signals, saved_mask;
  sigfillset(&all_signals);
  pthread_sigmask(SIG_SETMASK, &all_signals, &saved_mask);
  pid_t pid = ::fork();
  if (pid == 0) RunForkedChild(plan);
  int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &saved_mask, nullptr);
  status_write.reset();  // so the read below sees EOF once the child has exec'd

  if (pid < 0) {
    *err = fmt::format("fork: {}", std::strerror(fork_errno));
    return -1;
  }
  ChildFailure failure;
  if (ReadChildFailure(status_read.get(), &failure)) {
    ReapFailedChild(pid);
    *err = DescribeChildFailure(failure, options.cgroup_dir);
    return -1;
  }
  return pid;
}

}  // namespace

pid_t LaunchChild(const std::string& command, const JobStartOptions& options, int output_write_fd,
                  std::string* err) {
  if (options.cgroup_dir.empty()) return SpawnDirect(command, options, output_write_fd, err);
  return ForkIntoCgroup(command, options, output_write_fd, err);
}

}  // namespace headroom::exec_internal
