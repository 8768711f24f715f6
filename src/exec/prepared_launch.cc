// Implements PreparedLaunch: a child cloned onto headroom's memory (CLONE_VM, its own small stack) that joins a
// cgroup, reports, waits for the go-ahead and execs the job; headroom's side spawns, polls, hands over, keeps what a
// handed child still reads until its exec, and discards.
#include "headroom/exec/prepared_launch.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "headroom/exec/child_stacks.h"
#include "job_command.h"
#include "raw_syscall.h"
#include "scoped_fd.h"

namespace headroom {

// Everything the child needs; it lives in headroom's memory, which the child shares. The handshake is a few words
// in it, each a futex: the child's state, the go-ahead, and a word the kernel clears at the child's exec or exit
// (CLONE_CHILD_CLEARTID). argv and envp are filled in by Hand before it sets the go-ahead (release and acquire order
// them), so a launch costs headroom no socket and no system call but the go-ahead's wake.
struct PreparedLaunch::ChildPlan {
  const char* procs_path = nullptr;
  std::string procs_path_storage;
  int output_write_fd = -1;      // becomes the job's stdout and stderr
  int32_t state = 0;             // the child's: a ChildState
  int32_t failed_stage = 0;      // with kFailed: the Stage that failed and its errno
  int32_t failed_error = 0;
  int32_t go = 0;                // headroom's: 1 once argv and envp are set
  int32_t alive = 1;             // cleared by the kernel when the child execs or exits
  // Descriptors headroom inherited without close-on-exec (a make jobserver's, say), sorted: the job inherits them as
  // every job does. The child closes every other descriptor above stdio before it waits:
  // headroom's write end of a pipe, held on in a waiting child, would keep its reader from seeing EOF when headroom
  // closes it (the guard's watcher, for one).
  const std::vector<int>* inheritable_fds = nullptr;
  pid_t headroom_pid = -1;
  char** argv = nullptr;
  char** envp = nullptr;
  // What argv and envp point into, from the hand-over until the child's exec: the command and the overrides are
  // copied, since the caller's may be gone by then.
  std::string command;
  std::vector<std::string> overrides;
  std::unique_ptr<exec_internal::ShellArgv> shell;
  std::unique_ptr<exec_internal::JobEnvironment> environment;
  int spawned_pid = 0;  // written by the kernel when a resident clones the child (CLONE_PARENT_SETTID)
};

namespace {

using exec_internal::JobEnvironment;
using exec_internal::kCanRunOnSharedMemory;
using exec_internal::RawArg;
using exec_internal::RawExit;
using exec_internal::RawJoinCgroup;
using exec_internal::RawSyscall;
using exec_internal::MoveAboveStdio;
using exec_internal::ScopedFd;
using exec_internal::ShellArgv;

enum class Stage : int32_t { kReady = 0, kProcessGroup, kRedirectStdio, kCloseDescriptors, kJoinCgroup, kExec };

// ChildPlan::state: starting until the child is ready for its job, or has failed.
enum ChildState : int32_t { kChildStarting = 0, kChildReady = 1, kChildFailed = 2 };

// The futex calls on the plan's words: private ones (headroom and the child share one memory), except for `alive`,
// which the kernel wakes as a shared futex when it clears it.
void ChildWake(int32_t* word) { RawSyscall(SYS_futex, RawArg(word), FUTEX_WAKE_PRIVATE, 1); }
long FutexWait(int32_t* word, int32_t expected, int timeout_ms, int operation = FUTEX_WAIT_PRIVATE) {
  const timespec timeout = {timeout_ms / 1000, (timeout_ms % 1000) * 1'000'000L};
  return ::syscall(SYS_futex, word, operation, expected, timeout_ms < 0 ? nullptr : &timeout, nullptr, 0);
}
int32_t Load(const int32_t& word) { return __atomic_load_n(&word, __ATOMIC_ACQUIRE); }

// What a failed exec tells the job's output, since headroom no longer waits for it (no libc here: no strerror).
struct ExecFailureText {
  int error;
  const char* line;
};
constexpr ExecFailureText kExecFailureTexts[] = {
    {E2BIG, "headroom: exec /bin/sh: Argument list too long\n"},
    {ENOMEM, "headroom: exec /bin/sh: Cannot allocate memory\n"},
    {EAGAIN, "headroom: exec /bin/sh: Resource temporarily unavailable\n"},
    {ENOENT, "headroom: exec /bin/sh: No such file or directory\n"},
    {EACCES, "headroom: exec /bin/sh: Permission denied\n"},
};

void ChildWriteExecFailure(long error) {
  const char* line = "headroom: exec /bin/sh failed\n";
  for (const ExecFailureText& text : kExecFailureTexts) {
    if (text.error == error) line = text.line;
  }
  size_t length = 0;
  while (line[length] != '\0') ++length;
  RawSyscall(SYS_write, 2, RawArg(line), static_cast<long>(length));
}

[[noreturn]] void ChildFail(PreparedLaunch::ChildPlan* plan, Stage stage, long result) {
  if (stage == Stage::kExec) ChildWriteExecFailure(-result);  // its stderr is the job's output by now
  plan->failed_stage = static_cast<int32_t>(stage);
  plan->failed_error = static_cast<int32_t>(-result);
  __atomic_store_n(&plan->state, kChildFailed, __ATOMIC_RELEASE);
  ChildWake(&plan->state);
  RawExit(127);
}

// The kernel's struct sigaction on x86-64 (handler, flags, restorer, mask).
struct KernelSigaction {
  void (*handler)(int);
  unsigned long flags;
  void (*restorer)();
  uint64_t mask;
};

void ChildResetSignals() {
  const KernelSigaction default_action = {SIG_DFL, 0, nullptr, 0};
  // SIGKILL and SIGSTOP just fail; that is fine.
  for (int sig = 1; sig < NSIG; ++sig) {
    RawSyscall(SYS_rt_sigaction, sig, RawArg(&default_action), 0, sizeof default_action.mask);
  }
}

bool ChildRedirectStdio(const PreparedLaunch::ChildPlan* plan, long* result) {
  long null_fd = RawSyscall(SYS_open, RawArg("/dev/null"), O_RDONLY);
  if ((*result = null_fd) < 0) return false;
  if (null_fd != 0) {
    if ((*result = RawSyscall(SYS_dup2, null_fd, 0)) < 0) return false;
    RawSyscall(SYS_close, null_fd);
  }
  if ((*result = RawSyscall(SYS_dup2, plan->output_write_fd, 1)) < 0) return false;
  return (*result = RawSyscall(SYS_dup2, plan->output_write_fd, 2)) >= 0;
}

// close_range (Linux 5.9) over everything above stdio but the inheritable descriptors; an inheritable number headroom
// has since reused for one of its own (close-on-exec) goes too.
long ChildCloseDescriptors(const PreparedLaunch::ChildPlan* plan) {
  constexpr unsigned kLast = ~0u;
  unsigned next = 3;
  for (int kept : *plan->inheritable_fds) {
    if (kept < static_cast<int>(next)) continue;
    if (kept > static_cast<int>(next)) {
      if (long result = RawSyscall(SYS_close_range, next, kept - 1, 0); result < 0) return result;
    }
    next = static_cast<unsigned>(kept) + 1;
  }
  if (long result = RawSyscall(SYS_close_range, next, kLast, 0); result < 0) return result;
  for (int fd : *plan->inheritable_fds) {
    long flags = RawSyscall(SYS_fcntl, fd, F_GETFD);
    if (flags >= 0 && (flags & FD_CLOEXEC) != 0) RawSyscall(SYS_close, fd);
  }
  return 0;
}

// The child: all signals blocked (headroom blocked them around the clone) until the job's exec.
int PreparedChildMain(void* arg) {
  auto* plan = static_cast<PreparedLaunch::ChildPlan*>(arg);
  // Its own process group, as every non-console job has: a terminal's ^C reaches headroom, not a waiting child.
  if (long result = RawSyscall(SYS_setpgid, 0, 0); result < 0) ChildFail(plan, Stage::kProcessGroup, result);
  // It must not outlive headroom while it waits; the check covers a headroom that died before the prctl.
  RawSyscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL);
  if (RawSyscall(SYS_getppid) != plan->headroom_pid) RawExit(0);
  ChildResetSignals();
  long result = 0;
  if (!ChildRedirectStdio(plan, &result)) ChildFail(plan, Stage::kRedirectStdio, result);
  if ((result = ChildCloseDescriptors(plan)) < 0) ChildFail(plan, Stage::kCloseDescriptors, result);
  // One cloned by a resident of the cgroup was born there (procs_path null).
  if (plan->procs_path != nullptr && (result = RawJoinCgroup(plan->procs_path)) < 0) {
    ChildFail(plan, Stage::kJoinCgroup, result);
  }
  __atomic_store_n(&plan->state, kChildReady, __ATOMIC_RELEASE);
  ChildWake(&plan->state);  // headroom may be waiting for it in Hand
  // Discarding kills it here.
  while (__atomic_load_n(&plan->go, __ATOMIC_ACQUIRE) == 0) {
    RawSyscall(SYS_futex, RawArg(&plan->go), FUTEX_WAIT_PRIVATE, 0, 0);
  }
  // A job runs on when headroom dies, as one started the ordinary way does.
  RawSyscall(SYS_prctl, PR_SET_PDEATHSIG, 0);
  const uint64_t empty_mask = 0;
  RawSyscall(SYS_rt_sigprocmask, SIG_SETMASK, RawArg(&empty_mask), 0, sizeof empty_mask);
  // The exec clears `alive` (CLONE_CHILD_CLEARTID): from then on it no longer uses its stack or its plan.
  result = RawSyscall(SYS_execve, RawArg(plan->argv[0]), RawArg(plan->argv), RawArg(plan->envp));
  ChildFail(plan, Stage::kExec, result);
}

std::string DescribeFailure(const PreparedLaunch::ChildPlan& plan) {
  const char* reason = std::strerror(plan.failed_error);
  const std::string& procs_path = plan.procs_path_storage;
  switch (static_cast<Stage>(plan.failed_stage)) {
    case Stage::kReady: break;
    case Stage::kProcessGroup: return fmt::format("setpgid in prepared child: {}", reason);
    case Stage::kRedirectStdio: return fmt::format("redirecting prepared child's stdio: {}", reason);
    case Stage::kCloseDescriptors: return fmt::format("closing headroom's descriptors in prepared child: {}", reason);
    case Stage::kJoinCgroup: return fmt::format("prepared child cannot join '{}': {}", procs_path, reason);
    case Stage::kExec: return fmt::format("exec {}: {}", exec_internal::kShell, reason);
  }
  return fmt::format("prepared child failed: {}", reason);
}

// The descriptors above stdio this process holds without close-on-exec: those it inherited, since headroom opens its
// own close-on-exec. Listed once (a listing per launch costs more than the launch saves on trivial jobs).
const std::vector<int>& InheritableDescriptors() {
  static const std::vector<int> fds = [] {
    std::vector<int> found;
    DIR* dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) return found;
    const int listing_fd = ::dirfd(dir);
    while (const dirent* entry = ::readdir(dir)) {
      if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
      const int fd = std::atoi(entry->d_name);
      const int flags = fd > 2 && fd != listing_fd ? ::fcntl(fd, F_GETFD) : -1;
      if (flags >= 0 && (flags & FD_CLOEXEC) == 0) found.push_back(fd);
    }
    ::closedir(dir);
    std::sort(found.begin(), found.end());
    return found;
  }();
  return fds;
}

void Reap(pid_t pid) {
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

// A child handed its job but maybe not yet exec'd: it still runs on its stack and reads its plan, so both stay
// until the kernel clears its `alive` word (at its exec, or its exit).
struct HandedChild {
  std::unique_ptr<PreparedLaunch::ChildPlan> plan;
  void* stack = nullptr;
};

// Never destroyed: a child may still read its plan while headroom exits.
std::vector<HandedChild>& HandedChildren() {
  static auto* children = new std::vector<HandedChild>;
  return *children;
}

// Lets go of what handed children that have exec'd no longer need: a look at each one's word, no system call.
void SweepHandedChildren() {
  std::vector<HandedChild>& children = HandedChildren();
  size_t kept = 0;
  for (size_t i = 0; i < children.size(); ++i) {
    if (Load(children[i].plan->alive) == 0) {
      GiveBackChildStack(children[i].stack);
      continue;
    }
    if (kept != i) children[kept] = std::move(children[i]);
    ++kept;
  }
  children.resize(kept);
}

}  // namespace

bool PreparedLaunch::Supported() { return kCanRunOnSharedMemory; }

PreparedLaunch::PreparedLaunch() : plan_(std::make_unique<ChildPlan>()) {}

std::unique_ptr<PreparedLaunch> PreparedLaunch::Start(const std::string& cgroup_dir, SpawnResident* resident,
                                                      std::string* err) {
  if (!Supported()) {
    *err = "prepared launches need x86-64 and a build without sanitizers";
    return nullptr;
  }
  SweepHandedChildren();
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    *err = fmt::format("pipe: {}", std::strerror(errno));
    return nullptr;
  }
  ScopedFd output_read(MoveAboveStdio(pipe_fds[0]));
  ScopedFd output_write(MoveAboveStdio(pipe_fds[1]));
  if (!output_read.valid() || !output_write.valid()) {
    *err = fmt::format("fcntl: {}", std::strerror(errno));
    return nullptr;
  }
  std::unique_ptr<PreparedLaunch> launch(new PreparedLaunch());
  launch->stack_ = AcquireChildStack();
  if (launch->stack_ == nullptr) {
    *err = fmt::format("mmap: {}", std::strerror(errno));
    return nullptr;
  }
  ChildPlan& plan = *launch->plan_;
  plan.procs_path_storage = cgroup_dir + "/cgroup.procs";
  plan.procs_path = resident != nullptr ? nullptr : plan.procs_path_storage.c_str();
  plan.output_write_fd = output_write.get();
  plan.inheritable_fds = &InheritableDescriptors();
  plan.headroom_pid = ::getpid();
  if (resident != nullptr) {
    if (!launch->Spawn(resident, output_write.get(), err)) return nullptr;
    output_write.release();  // the resident closes it once the child holds its own
    launch->output_read_fd_ = output_read.release();
    return launch;
  }

  sigset_t all_signals, saved_mask;
  sigfillset(&all_signals);
  pthread_sigmask(SIG_SETMASK, &all_signals, &saved_mask);
  pid_t pid = ::clone(PreparedChildMain, launch->stack_, CLONE_VM | CLONE_CHILD_CLEARTID | SIGCHLD, &plan, nullptr,
                      nullptr, &plan.alive);
  const int clone_error = errno;
  pthread_sigmask(SIG_SETMASK, &saved_mask, nullptr);
  if (pid < 0) {
    *err = fmt::format("clone: {}", std::strerror(clone_error));
    return nullptr;  // the destructor gives the stack back
  }
  launch->pid_ = pid;
  launch->output_read_fd_ = output_read.release();
  return launch;  // output_write closes here: the child has its own copy
}

// Asks the resident to clone the child; the pid is learnt from the kernel's write into the plan (LearnPid).
bool PreparedLaunch::Spawn(SpawnResident* resident, int output_write_fd, std::string* err) {
  SpawnResident::Request request;
  request.entry = PreparedChildMain;
  request.arg = plan_.get();
  request.stack_top = stack_;
  request.pid_word = &plan_->spawned_pid;
  request.clear_word = &plan_->alive;
  request.close_after[0] = output_write_fd;
  if (!resident->Post(request, &spawn_ticket_)) {
    *err = "the cgroup's spawn resident is gone";
    return false;
  }
  resident_ = resident;
  pid_ = 0;
  return true;
}

// The child's pid, once the resident has cloned it: the kernel writes it before the child runs, so it is there by the
// time the child is ready. A failed clone (or join of the resident) leaves -errno.
void PreparedLaunch::LearnPid() {
  if (resident_ == nullptr || plan_ == nullptr) return;
  const int pid = __atomic_load_n(&plan_->spawned_pid, __ATOMIC_ACQUIRE);
  if (pid > 0) pid_ = pid;
  if (pid < 0) {
    failure_ = fmt::format("the cgroup's spawn resident could not join it or clone the child: {}", std::strerror(-pid));
  }
  if (resident_->Served(spawn_ticket_)) resident_ = nullptr;
}

PreparedLaunch::~PreparedLaunch() { Discard(); }

void PreparedLaunch::Discard() {
  if (resident_ != nullptr) {  // a clone asked for and maybe not made yet: there may be a child to kill after it
    resident_->WaitServed(spawn_ticket_);
    LearnPid();
    resident_ = nullptr;
  }
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    Reap(pid_);
    pid_ = -1;
  }
  ReleaseStack();
  if (output_read_fd_ >= 0) ::close(output_read_fd_);
  output_read_fd_ = -1;
  state_ = State::kFailed;
}

// Only once the child has exec'd or been reaped: until then it runs on this stack.
void PreparedLaunch::ReleaseStack() {
  GiveBackChildStack(stack_);
  stack_ = nullptr;
}

PreparedLaunch::State PreparedLaunch::Poll(int timeout_ms) {
  WaitForReport(timeout_ms);
  return state_;
}

// Reads the child's state word; waits on it up to timeout_ms, in short steps: a child killed before it could say (or
// a resident killed before it cloned the child) wakes no one.
bool PreparedLaunch::WaitForReport(int timeout_ms) {
  if (state_ != State::kJoining) return state_ == State::kReady;
  constexpr int kStepMs = 10;
  for (int waited = 0;;) {
    LearnPid();
    const int32_t state = Load(plan_->state);
    if (state == kChildReady) {
      state_ = State::kReady;
      return true;
    }
    if (state == kChildFailed) {
      state_ = State::kFailed;
      failure_ = DescribeFailure(*plan_);
      return false;
    }
    const bool cloned = resident_ == nullptr && pid_ > 0;
    const bool never_cloned = resident_ != nullptr && !resident_->Alive() && !resident_->WaitServed(spawn_ticket_);
    if ((cloned && Load(plan_->alive) == 0) || never_cloned || (resident_ == nullptr && pid_ <= 0)) {
      LearnPid();
      state_ = State::kFailed;  // it died before it could say
      return false;
    }
    if (waited >= timeout_ms) return false;  // still joining
    const int step = std::min(timeout_ms - waited, kStepMs);
    FutexWait(&plan_->state, kChildStarting, step);
    waited += step;
  }
}

pid_t PreparedLaunch::Hand(const std::string& command, const std::vector<std::string>& environment, int timeout_ms,
                           int* output_read_fd, std::string* err) {
  if (!WaitForReport(timeout_ms)) {
    *err = state_ == State::kJoining ? fmt::format("prepared child still joining its cgroup after {} ms", timeout_ms)
           : !failure_.empty() ? failure_
                               : std::string("prepared child exited");
    Discard();
    return -1;
  }
  // The plan keeps the strings argv and envp point into until the exec.
  plan_->command = command;
  plan_->overrides = environment;
  plan_->shell = std::make_unique<exec_internal::ShellArgv>(plan_->command);
  plan_->environment = std::make_unique<exec_internal::JobEnvironment>(plan_->overrides);
  plan_->argv = plan_->shell->argv;
  plan_->envp = plan_->environment->envp();
  __atomic_store_n(&plan_->go, 1, __ATOMIC_RELEASE);
  ::syscall(SYS_futex, &plan_->go, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  if (ExecFailureIsLikely(command, environment) && !WaitForExec(err)) return -1;
  // The child execs while headroom goes on: waiting here would hold the build loop for the child's wake-up and exec,
  // which on a busy machine is the larger part of a trivial job's start. What it still reads stays until then.
  HandedChildren().push_back(HandedChild{std::move(plan_), std::exchange(stack_, nullptr)});
  *output_read_fd = std::exchange(output_read_fd_, -1);
  state_ = State::kFailed;  // spent
  resident_ = nullptr;      // done with the plan: the resident only closes headroom's copy of the output pipe now
  return std::exchange(pid_, -1);
}

// The exec fails with E2BIG once one string passes 128 KiB (MAX_ARG_STRLEN), far above what ordinary jobs pass: only
// such a job waits for its exec here, and can still be started another way, which reports the error as ninja does.
// (The other E2BIG, an environment near a quarter of the stack limit, fails every job however it starts; the job's
// output then says why.)
bool PreparedLaunch::ExecFailureIsLikely(const std::string& command, const std::vector<std::string>& environment) {
  constexpr size_t kLargeArgumentBytes = 64 * 1024;
  size_t bytes = command.size();
  for (const std::string& assignment : environment) bytes += assignment.size();
  return bytes >= kLargeArgumentBytes;
}

// Waits for the exec or the exit (the kernel clears `alive` at either; a failed exec says so in the state first).
// false with *err after a failure: the child is gone and the job must be started another way.
bool PreparedLaunch::WaitForExec(std::string* err) {
  for (int32_t alive; (alive = Load(plan_->alive)) != 0;) FutexWait(&plan_->alive, alive, -1, FUTEX_WAIT);
  if (Load(plan_->state) == kChildFailed) {
    *err = DescribeFailure(*plan_);
    Discard();
    return false;
  }
  return true;
}

}  // namespace headroom
