// Implements LaunchChild: posix_spawn for ordinary jobs; for cgroup jobs, on v2 a fork born in the cgroup
// (clone3 CLONE_INTO_CGROUP), else a vfork-like clone that joins it before exec (a fork in sanitized builds).
#include "child_launch.h"

#include <fcntl.h>
#include <signal.h>
#include <sched.h>
#include <spawn.h>
#include <linux/magic.h>
#include <linux/sched.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "job_command.h"
#include "scoped_fd.h"

namespace headroom::exec_internal {
namespace {

// Signals whose disposition the child must not inherit: everything catchable goes back to default
// (an ignored SIGPIPE or SIGINT in headroom would otherwise leak into every build command).
sigset_t AllSignalsToDefault() {
  sigset_t set;
  sigfillset(&set);
  sigdelset(&set, SIGKILL);
  sigdelset(&set, SIGSTOP);
  return set;
}

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
  // dup2 onto itself clears close-on-exec in the child only (POSIX 2024, glibc 2.29+).
  if (!setup_error && options.inherit_fd >= 0)
    setup_error = posix_spawn_file_actions_adddup2(&actions, options.inherit_fd, options.inherit_fd);
  if (!setup_error) setup_error = posix_spawnattr_setflags(&attr, flags);

  pid_t pid = -1;
  ShellArgv shell(command);
  JobEnvironment environment(options.environment);
  int spawn_error =
      setup_error ? setup_error : posix_spawn(&pid, kShell, &actions, &attr, shell.argv, environment.envp());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (spawn_error) {
    *err = fmt::format("posix_spawn {}: {}", kShell, std::strerror(spawn_error));
    return -1;
  }
  return pid;
}

// ---- clone(CLONE_VM | CLONE_VFORK) + cgroup path -----------------------------------------------
//
// posix_spawn cannot put the child into a cgroup before exec, so cgroup jobs get their own launcher.
// It works like posix_spawn does inside libc: the child shares headroom's memory and runs on a small
// stack of its own while headroom waits, so no page tables are copied (a plain fork of a large
// headroom process costs far more than the job itself for trivial commands). The child only makes
// raw system calls until it execs, and reports a failure through the shared plan.

enum class ChildStage : int { kSetProcessGroup = 1, kJoinCgroup, kRedirectStdio, kExec };

struct ChildFailure {
  ChildStage stage;
  int error;
};

// Everything the child needs, prepared before the clone; it writes `failure` only when setup fails.
struct ChildPlan {
  const char* cgroup_procs_path;
  bool use_console;
  int output_write_fd;
  char** argv;
  char** envp;
  int inherit_fd = -1;       // made inheritable in the child (JobStartOptions::inherit_fd)
  bool born_in_cgroup = false;  // clone3(CLONE_INTO_CGROUP) put it there: nothing to join
  int status_write_fd = -1;  // fork path only
  bool failed = false;
  ChildFailure failure{};
};

[[noreturn]] void ReportAndExit(ChildPlan* plan, ChildStage stage) {
  const ChildFailure failure{stage, errno};
  plan->failure = failure;
  plan->failed = true;
  if (plan->status_write_fd >= 0) {
    [[maybe_unused]] ssize_t ignored = ::write(plan->status_write_fd, &failure, sizeof failure);
  }
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

[[noreturn]] void RunChild(ChildPlan* plan) {
  // All signals are blocked here (the parent blocked them around the clone), so no handler of
  // headroom's can run in the child before the dispositions are reset.
  ResetSignalDispositions();
  if (!plan->use_console && ::setpgid(0, 0) != 0) ReportAndExit(plan, ChildStage::kSetProcessGroup);
  if (!plan->born_in_cgroup && !JoinCgroup(plan->cgroup_procs_path)) ReportAndExit(plan, ChildStage::kJoinCgroup);
  if (!plan->use_console && !RedirectStdio(plan->output_write_fd)) ReportAndExit(plan, ChildStage::kRedirectStdio);
  if (plan->inherit_fd >= 0 && ::fcntl(plan->inherit_fd, F_SETFD, 0) != 0) ReportAndExit(plan, ChildStage::kRedirectStdio);
  sigset_t empty_mask;
  sigemptyset(&empty_mask);
  sigprocmask(SIG_SETMASK, &empty_mask, nullptr);
  ::execve(kShell, plan->argv, plan->envp);
  ReportAndExit(plan, ChildStage::kExec);
}

int CloneChildEntry(void* plan) { RunChild(static_cast<ChildPlan*>(plan)); }

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

// The stack a memory-sharing child runs on until it execs (headroom waits meanwhile, so one is enough).
constexpr size_t kChildStackBytes = 64 * 1024;
alignas(16) char child_stack[kChildStackBytes];

#if defined(__x86_64__)
// clone3 whose child starts on args->stack and runs entry(arg) there, exiting with its result: what libc's clone
// does for clone(2), which clone3 has no libc wrapper for. The child only has its registers: entry and arg ride
// in r12 and r13, which the kernel copies to it; rbp is cleared so nothing unwinds into the parent's frames.
pid_t Clone3OnStack(struct clone_args* args, int (*entry)(void*), void* arg) {
  long result = SYS_clone3;
  register long entry_register asm("r12") = reinterpret_cast<long>(entry);
  register long arg_register asm("r13") = reinterpret_cast<long>(arg);
  asm volatile(
      "syscall\n\t"
      "test %%rax, %%rax\n\t"
      "jnz 1f\n\t"
      "xor %%ebp, %%ebp\n\t"
      "mov %%r13, %%rdi\n\t"
      "call *%%r12\n\t"
      "mov %%eax, %%edi\n\t"
      "mov %[exit_number], %%eax\n\t"
      "syscall\n\t"
      "hlt\n\t"
      "1:\n\t"
      : "+a"(result)
      : "D"(args), "S"(sizeof *args), "r"(entry_register), "r"(arg_register), [exit_number] "i"(SYS_exit)
      : "rcx", "r11", "memory");
  if (result < 0) {
    errno = static_cast<int>(-result);
    return -1;
  }
  return static_cast<pid_t>(result);
}
#else
// No assembly here to start a child on its own stack: ENOSYS, so such a build joins as on v1 (a fork of a large
// headroom costs more than the join).
pid_t Clone3OnStack(struct clone_args*, int (*)(void*), void*) {
  errno = ENOSYS;
  return -1;
}
#endif

// clone3 with fork semantics, born in the cgroup `cgroup_fd` names (cgroup v2, Linux >= 5.7). Joining a cgroup
// after birth waits for an RCU grace period (~11 ms, docs/memory-observation.md, "Launch latency"); being born in
// it does not. -1 with errno when the kernel refuses (no clone3, not a v2 cgroup, ...). It copies headroom's page
// tables (~50 ms for 200 MiB of heap on this machine): used only where the child cannot share memory.
pid_t CloneIntoCgroup(int cgroup_fd) {
  struct clone_args args = {};
  args.flags = CLONE_INTO_CGROUP;
  args.exit_signal = SIGCHLD;
  args.cgroup = static_cast<uint64_t>(cgroup_fd);
  return static_cast<pid_t>(::syscall(SYS_clone3, &args, sizeof args));
}

// The fork child's copy of the plan is private, so a failure comes back through a close-on-exec pipe. With
// `cgroup_fd` >= 0 the child is born in that cgroup (clone3); -1 with errno = ENOSYS etc. leaves no child.
pid_t ForkChild(ChildPlan* plan, std::string* err, int cgroup_fd = -1) {
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
  plan->status_write_fd = status_write.get();
  plan->born_in_cgroup = cgroup_fd >= 0;
  pid_t pid = cgroup_fd >= 0 ? CloneIntoCgroup(cgroup_fd) : ::fork();
  if (pid == 0) RunChild(plan);
  if (pid < 0) {
    const int error = errno;
    *err = fmt::format("{}: {}", cgroup_fd >= 0 ? "clone3" : "fork", std::strerror(error));
    errno = error;
    return -1;
  }
  status_write.reset();  // so the read below sees EOF once the child has exec'd
  plan->failed = ReadChildFailure(status_read.get(), &plan->failure);
  return pid;
}

// A cgroup v2 directory opened for clone3, or -1 (v1, or it cannot be opened: the child joins instead).
ScopedFd OpenV2Cgroup(const std::string& dir) {
  struct statfs fs;
  if (::statfs(dir.c_str(), &fs) != 0 || fs.f_type != CGROUP2_SUPER_MAGIC) return ScopedFd();
  return ScopedFd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

// Off once the kernel has said it has no clone3 or no CLONE_INTO_CGROUP; then every job joins after birth.
bool clone_into_cgroup_works = true;

// On cgroup v2, a child born in the cgroup: sharing headroom's memory on its own stack while headroom waits
// (as the v1 path's clone does, so nothing is copied), or, in sanitized builds, a fork. Returns -1 with
// *used_clone3 false when that path is not available.
pid_t StartChildBornInCgroup(ChildPlan* plan, const std::string& cgroup_dir, bool* used_clone3) {
  *used_clone3 = false;
  if (!clone_into_cgroup_works) return -1;
  ScopedFd cgroup = OpenV2Cgroup(cgroup_dir);
  if (!cgroup.valid()) return -1;
  pid_t pid = -1;
  if (kShareMemoryWithChild) {
    struct clone_args args = {};
    args.flags = CLONE_VM | CLONE_VFORK | CLONE_INTO_CGROUP;
    args.exit_signal = SIGCHLD;
    args.stack = reinterpret_cast<uint64_t>(child_stack);
    args.stack_size = kChildStackBytes;
    args.cgroup = static_cast<uint64_t>(cgroup.get());
    plan->born_in_cgroup = true;
    pid = Clone3OnStack(&args, CloneChildEntry, plan);
  } else {
    std::string clone_err;
    pid = ForkChild(plan, &clone_err, cgroup.get());
  }
  if (pid >= 0) {
    *used_clone3 = true;
    return pid;
  }
  // ENOSYS (before 5.3, or no Clone3OnStack here), E2BIG / EINVAL (clone3 without CLONE_INTO_CGROUP, before 5.7):
  // never again. Anything
  // else (e.g. EBUSY, a cgroup with processes below it) only for this job: the join path reports its own error.
  if (errno == ENOSYS || errno == E2BIG || errno == EINVAL) clone_into_cgroup_works = false;
  return -1;
}

// Starts the child sharing memory (the parent resumes once it has exec'd or exited) or, in sanitized
// builds, as a fork whose failure report comes back through a close-on-exec pipe.
pid_t StartChild(ChildPlan* plan, std::string* err) {
  if (kShareMemoryWithChild) {
    pid_t pid = ::clone(CloneChildEntry, child_stack + kChildStackBytes, CLONE_VM | CLONE_VFORK | SIGCHLD, plan);
    if (pid < 0) *err = fmt::format("clone: {}", std::strerror(errno));
    return pid;
  }
  return ForkChild(plan, err);
}

pid_t ForkIntoCgroup(const std::string& command, const JobStartOptions& options, int output_write_fd,
                     std::string* err) {
  std::string procs_path = options.cgroup_dir + "/cgroup.procs";
  ShellArgv shell(command);
  JobEnvironment environment(options.environment);
  ChildPlan plan{procs_path.c_str(), options.use_console, output_write_fd, shell.argv, environment.envp(),
                 options.inherit_fd};

  sigset_t all_signals, saved_mask;
  sigfillset(&all_signals);
  pthread_sigmask(SIG_SETMASK, &all_signals, &saved_mask);
  bool used_clone3 = false;
  pid_t pid = StartChildBornInCgroup(&plan, options.cgroup_dir, &used_clone3);
  if (!used_clone3) {
    plan.born_in_cgroup = false;
    plan.status_write_fd = -1;
    pid = StartChild(&plan, err);
  }
  pthread_sigmask(SIG_SETMASK, &saved_mask, nullptr);
  if (pid < 0) return -1;
  if (plan.failed) {
    ReapFailedChild(pid);
    *err = DescribeChildFailure(plan.failure, options.cgroup_dir);
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
