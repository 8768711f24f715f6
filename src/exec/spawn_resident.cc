// Implements SpawnResident: the resident's loop (join once, then wait on a futex and clone each request with
// CLONE_PARENT) and headroom's side (start, post, wait, kill).
#include "headroom/exec/spawn_resident.h"

#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "headroom/exec/child_stacks.h"
#include "raw_syscall.h"

namespace headroom {

struct SpawnResident::Shared {
  uint32_t posted = 0;  // the number of the latest request; the futex the resident waits on
  uint32_t served = 0;  // the number of the latest request it is done with
  Request request;
  int alive = 0;        // its pid, cleared by the kernel at its exit
  pid_t headroom_pid = -1;
  std::string procs_path;
};

namespace {

using exec_internal::RawArg;
using exec_internal::RawExit;
using exec_internal::RawJoinCgroup;
using exec_internal::RawSyscall;

#if defined(__x86_64__)
// clone(2) on the raw system call. The child starts on stack_top with nothing of the caller's frame, so it takes
// entry and arg from its new stack, calls entry and exits with its result. Returns the child's pid or -errno.
long RawClone(unsigned long flags, void* stack_top, int* parent_tid, int* child_tid_word, int (*entry)(void*),
              void* arg) {
  void** stack = static_cast<void**>(stack_top);
  *--stack = arg;
  *--stack = reinterpret_cast<void*>(entry);
  long result;
  register long child_tid asm("r10") = reinterpret_cast<long>(child_tid_word);
  register long tls asm("r8") = 0;
  asm volatile(
      "syscall\n\t"
      "testq %%rax, %%rax\n\t"
      "jnz 1f\n\t"
      "xorl %%ebp, %%ebp\n\t"
      "popq %%rax\n\t"  // entry
      "popq %%rdi\n\t"  // arg; the stack is 16-byte aligned again for the call
      "callq *%%rax\n\t"
      "movq %%rax, %%rdi\n\t"
      "movl %[exit_number], %%eax\n\t"
      "syscall\n\t"
      "hlt\n\t"
      "1:\n\t"
      : "=a"(result)
      : "a"(SYS_clone), "D"(flags), "S"(stack), "d"(parent_tid), "r"(child_tid), "r"(tls),
        [exit_number] "i"(SYS_exit)
      : "rcx", "r11", "memory");
  return result;
}
#else
long RawClone(unsigned long, void*, int*, int*, int (*)(void*), void*) { return -ENOSYS; }
#endif

// What is left of a request once its child exists (or never will): headroom's copies of the child's descriptors.
// Each is marked closed as it goes, so a resident killed half way leaves headroom only the ones still open.
void CloseRequestDescriptors(SpawnResident::Request* request) {
  for (int& fd : request->close_after) {
    if (fd < 0) continue;
    RawSyscall(SYS_close, fd);
    __atomic_store_n(&fd, -1, __ATOMIC_RELEASE);
  }
}

// The resident: every signal blocked (headroom blocked them around its clone) for its whole life.
int ResidentMain(void* arg) {
  auto* shared = static_cast<SpawnResident::Shared*>(arg);
  RawSyscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL);
  if (RawSyscall(SYS_getppid) != shared->headroom_pid) RawExit(0);  // headroom died before the prctl
  RawSyscall(SYS_prctl, PR_SET_NAME, RawArg(SpawnResident::kProcessName));
  const long joined = RawJoinCgroup(shared->procs_path.c_str());
  uint32_t taken = 0;
  for (;;) {
    const uint32_t posted = __atomic_load_n(&shared->posted, __ATOMIC_ACQUIRE);
    if (posted == taken) {
      RawSyscall(SYS_futex, RawArg(&shared->posted), FUTEX_WAIT_PRIVATE, taken, 0);
      continue;
    }
    taken = posted;
    SpawnResident::Request* request = &shared->request;
    // CLONE_PARENT: the child is headroom's (headroom reaps it and gets its SIGCHLD), born in this cgroup.
    const unsigned long clear = request->clear_word != nullptr ? CLONE_CHILD_CLEARTID : 0;
    const long pid = joined < 0 ? joined
                                : RawClone(CLONE_VM | CLONE_PARENT | CLONE_PARENT_SETTID | clear, request->stack_top,
                                           request->pid_word, request->clear_word, request->entry, request->arg);
    if (pid < 0) __atomic_store_n(request->pid_word, static_cast<int>(pid), __ATOMIC_RELEASE);
    CloseRequestDescriptors(request);
    __atomic_store_n(&shared->served, taken, __ATOMIC_RELEASE);
  }
}

}  // namespace

std::unique_ptr<SpawnResident> SpawnResident::Start(const std::string& cgroup_dir, std::string* err) {
  if (!exec_internal::kCanRunOnSharedMemory) {
    *err = "a spawn resident needs x86-64 and a build without sanitizers";
    return nullptr;
  }
  std::unique_ptr<SpawnResident> resident(new SpawnResident());
  resident->shared_ = std::make_unique<Shared>();
  Shared& shared = *resident->shared_;
  shared.procs_path = cgroup_dir + "/cgroup.procs";
  shared.headroom_pid = ::getpid();
  resident->stack_ = AcquireChildStack();
  if (resident->stack_ == nullptr) {
    *err = fmt::format("mmap: {}", std::strerror(errno));
    return nullptr;
  }
  sigset_t all_signals, saved_mask;
  sigfillset(&all_signals);
  pthread_sigmask(SIG_SETMASK, &all_signals, &saved_mask);
  // CLONE_FILES: the children it clones copy headroom's current descriptor table, not a stale one of its own.
  const int flags = CLONE_VM | CLONE_FILES | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD;
  const pid_t pid = ::clone(ResidentMain, resident->stack_, flags, &shared, &shared.alive, nullptr, &shared.alive);
  const int clone_error = errno;
  pthread_sigmask(SIG_SETMASK, &saved_mask, nullptr);
  if (pid < 0) {
    *err = fmt::format("clone: {}", std::strerror(clone_error));
    return nullptr;  // the destructor gives the stack back
  }
  resident->pid_ = pid;
  return resident;
}

SpawnResident::~SpawnResident() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  GiveBackChildStack(stack_);
}

bool SpawnResident::Alive() const { return pid_ > 0 && __atomic_load_n(&shared_->alive, __ATOMIC_ACQUIRE) != 0; }

bool SpawnResident::Post(const Request& request, uint32_t* ticket) {
  const uint32_t previous = __atomic_load_n(&shared_->posted, __ATOMIC_RELAXED);
  if (!WaitServed(previous) || !Alive()) return false;
  shared_->request = request;
  *ticket = previous + 1;
  __atomic_store_n(&shared_->posted, *ticket, __ATOMIC_RELEASE);
  ::syscall(SYS_futex, &shared_->posted, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  return true;
}

// Requests are served in order: a later number served means this one was too.
bool SpawnResident::Served(uint32_t ticket) const {
  return static_cast<int32_t>(__atomic_load_n(&shared_->served, __ATOMIC_ACQUIRE) - ticket) >= 0;
}

// Only a request that is discarded before its child reported waits here (the resident serves in microseconds), so
// it polls in short steps rather than have the resident wake anyone on every request.
bool SpawnResident::WaitServed(uint32_t ticket) {
  constexpr timespec kStep = {0, 1'000'000};
  for (;;) {
    if (Served(ticket)) return true;
    if (!Alive()) {
      if (Served(ticket)) return true;
      CloseRequestDescriptors(&shared_->request);
      return false;
    }
    ::nanosleep(&kStep, nullptr);
  }
}

}  // namespace headroom
