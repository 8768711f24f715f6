// Implements the POSIX ProcessRunner: job table, output pipes and pidfds multiplexed with ppoll,
// reaping with wait4 (rusage), signalling process groups, and abort/cleanup so nothing leaks.
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "child_launch.h"
#include "headroom/exec/prepared_launch.h"
#include "headroom/exec/process_runner.h"
#include "interrupt_signals.h"
#include "scoped_fd.h"

namespace headroom {
namespace {

using exec_internal::InterruptSignals;
using exec_internal::ScopedFd;

// Without pidfds (kernels before 5.3) we cannot sleep on a process's exit, so ppoll wakes up this
// often to check with WNOHANG. Only used in that fallback.
constexpr int kExitPollIntervalMs = 10;
constexpr size_t kReadChunk = 64 * 1024;

int64_t MonotonicMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

int64_t TimevalMs(const timeval& tv) { return int64_t{tv.tv_sec} * 1000 + tv.tv_usec / 1000; }

ScopedFd OpenPidFd(pid_t pid) {
#ifdef SYS_pidfd_open
  return ScopedFd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));  // always close-on-exec
#else
  return ScopedFd();
#endif
}

struct Job {
  JobId id = -1;
  pid_t pid = -1;
  bool console = false;
  int64_t start_ms = 0;
  int64_t end_ms = 0;  // when reaped, so collection delays do not inflate wall time
  // Open until EOF. ninja semantics: a job is not finished before EOF, even if its shell exited
  // while a daemon it started still holds the pipe open; such a build waits for the daemon.
  ScopedFd output;
  // Opened once we wait for the exit (after EOF, or at once for console jobs). Because we only
  // reap after EOF, the leader stays (at least) a zombie while the job is in the table, so its
  // pid and process group id can never be reused under us: signalling them is always safe.
  ScopedFd pidfd;
  bool reaped = false;
  int wait_status = 0;
  rusage usage = {};
  std::string captured;
};

// Single-threaded by design (like ninja): create it and call it from one thread, because the
// interrupt signals are blocked in, and only unblocked by ppoll on, the creating thread. Once an
// interrupt is recorded it stays: every later Wait returns kInterrupted at once, and the caller is
// expected to AbortAll.
class PosixProcessRunner : public ProcessRunner {
 public:
  ~PosixProcessRunner() override { AbortAll(SIGKILL); }

  JobId Start(const std::string& command, const JobStartOptions& options, std::string* err) override;
  WaitResult Wait(int timeout_ms, std::vector<JobExit>* finished) override;
  pid_t PidOf(JobId id) const override;
  pid_t ProcessGroupOf(JobId id) const override;
  bool SignalJob(JobId id, int sig) override;
  void AbortAll(int sig) override;
  size_t running_count() const override { return jobs_.size(); }
  int interrupt_signal() const override { return interrupts_.last_signal(); }

 private:
  enum class FdRole { kWake, kOutput, kExit };
  struct PollTarget {
    FdRole role;
    Job* job;
  };

  Job* Find(JobId id) const;
  bool StartPrepared(const std::string& command, const JobStartOptions& options, Job* job);
  JobId Add(std::unique_ptr<Job> job);
  // One ppoll round: reads output, notices exits, and moves finished jobs into *finished.
  void PollOnce(int timeout_ms, std::vector<JobExit>* finished);
  void AddPollFd(int fd, FdRole role, Job* job);
  int PpollWithInterruptsUnblocked(int timeout_ms);
  void ReadOutput(Job* job);
  void BeginWaitingForExit(Job* job);
  bool TryReap(Job* job, int options);
  bool NeedsExitPolling(const Job& job) const { return !job.output.valid() && !job.pidfd.valid() && !job.reaped; }
  void MoveReapedJobs(std::vector<JobExit>* finished);
  static JobExit MakeExit(Job* job);
  bool SignalJobProcesses(const Job& job, int sig) const;
  static bool LeaderHasExited(const Job& job);

  InterruptSignals interrupts_;  // declared first: lives until the destructor's AbortAll is done
  std::vector<std::unique_ptr<Job>> jobs_;
  JobId next_id_ = 0;
  std::vector<pollfd> pollfds_;
  std::vector<PollTarget> poll_targets_;
  std::vector<char> read_buffer_ = std::vector<char>(kReadChunk);
};

JobId PosixProcessRunner::Start(const std::string& command, const JobStartOptions& options, std::string* err) {
  auto job = std::make_unique<Job>();
  job->console = options.use_console;
  if (options.prepared != nullptr) {
    if (StartPrepared(command, options, job.get())) return Add(std::move(job));
    options.prepared->Discard();  // it holds the cgroup the job is about to join
  }
  ScopedFd output_write;
  if (!job->console) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      *err = fmt::format("pipe: {}", std::strerror(errno));
      return -1;
    }
    job->output.reset(exec_internal::MoveAboveStdio(fds[0]));
    output_write.reset(exec_internal::MoveAboveStdio(fds[1]));
    if (!job->output.valid() || !output_write.valid()) {
      *err = fmt::format("fcntl: {}", std::strerror(errno));
      return -1;
    }
  }
  job->start_ms = MonotonicMs();
  job->pid = exec_internal::LaunchChild(command, options, output_write.get(), err);
  if (job->pid < 0) return -1;
  // Our copy of the write end must go, or EOF would never come.
  output_write.reset();
  if (job->console) BeginWaitingForExit(job.get());
  return Add(std::move(job));
}

// A prepared child has joined the job's cgroup ahead of time; a console job or one inheriting a descriptor needs what
// only the other launch paths set up. false: the job was not started (the caller discards the child).
bool PosixProcessRunner::StartPrepared(const std::string& command, const JobStartOptions& options, Job* job) {
  // Normally ready long before: the child joined while its cgroup was a spare. If it is still joining, waiting for it
  // is never slower than joining afresh; a child stuck far beyond a grace period (~10 ms) is given up, so a stuck one
  // costs the build loop a second at most.
  constexpr int kPreparedReadyWaitMs = 1'000;
  if (job->console || options.inherit_fd >= 0) return false;
  job->start_ms = MonotonicMs();
  int output_read = -1;
  std::string hand_err;
  job->pid = options.prepared->Hand(command, options.environment, kPreparedReadyWaitMs, &output_read, &hand_err);
  if (job->pid < 0) return false;
  job->output.reset(output_read);
  return true;
}

JobId PosixProcessRunner::Add(std::unique_ptr<Job> job) {
  job->id = next_id_++;
  JobId id = job->id;
  jobs_.push_back(std::move(job));
  return id;
}

ProcessRunner::WaitResult PosixProcessRunner::Wait(int timeout_ms, std::vector<JobExit>* finished) {
  const size_t finished_before = finished->size();
  const int64_t deadline = timeout_ms < 0 ? -1 : MonotonicMs() + timeout_ms;
  for (;;) {
    // A job can already be reaped before any poll (a console job that exited before Start opened
    // its pidfd): nothing would wake ppoll for it, so collect such jobs first.
    MoveReapedJobs(finished);
    // Finished jobs are appended even when interrupted, so their results are not lost.
    if (interrupts_.last_signal() != 0) return WaitResult::kInterrupted;
    if (finished->size() > finished_before) return WaitResult::kJobsFinished;
    // Nothing running means nothing can ever finish: report a timeout rather than block forever. With a timeout
    // (a build waiting for other builds to free memory) it waits that long for an interrupt only.
    if (jobs_.empty() && deadline < 0) return WaitResult::kTimeout;
    int remaining = -1;
    if (deadline >= 0) {
      remaining = static_cast<int>(std::max<int64_t>(0, deadline - MonotonicMs()));
    }
    PollOnce(remaining, finished);
    if (remaining == 0 && finished->size() == finished_before && interrupts_.last_signal() == 0) {
      return WaitResult::kTimeout;
    }
  }
}

void PosixProcessRunner::AddPollFd(int fd, FdRole role, Job* job) {
  pollfds_.push_back(pollfd{fd, POLLIN, 0});
  poll_targets_.push_back(PollTarget{role, job});
}

int PosixProcessRunner::PpollWithInterruptsUnblocked(int timeout_ms) {
  sigset_t mask = interrupts_.MaskWhileWaiting();
  timespec timeout = {timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
  return ::ppoll(pollfds_.data(), pollfds_.size(), timeout_ms < 0 ? nullptr : &timeout, &mask);
}

void PosixProcessRunner::PollOnce(int timeout_ms, std::vector<JobExit>* finished) {
  pollfds_.clear();
  poll_targets_.clear();
  if (interrupts_.wake_fd() >= 0) AddPollFd(interrupts_.wake_fd(), FdRole::kWake, nullptr);
  bool exit_polling = false;
  for (auto& job : jobs_) {
    if (job->output.valid()) {
      AddPollFd(job->output.get(), FdRole::kOutput, job.get());
    } else if (job->pidfd.valid()) {
      AddPollFd(job->pidfd.get(), FdRole::kExit, job.get());
    } else {
      exit_polling = exit_polling || NeedsExitPolling(*job);
    }
  }
  if (exit_polling && (timeout_ms < 0 || timeout_ms > kExitPollIntervalMs)) timeout_ms = kExitPollIntervalMs;

  // EINTR (an interrupt or any other handled signal) leaves every revents at 0: nothing to do.
  if (PpollWithInterruptsUnblocked(timeout_ms) > 0) {
    for (size_t i = 0; i < pollfds_.size(); ++i) {
      if (pollfds_[i].revents == 0) continue;
      const PollTarget& target = poll_targets_[i];
      switch (target.role) {
        case FdRole::kWake: interrupts_.DrainWakeFd(); break;
        case FdRole::kOutput: ReadOutput(target.job); break;
        case FdRole::kExit: TryReap(target.job, WNOHANG); break;
      }
    }
  }
  if (exit_polling) {
    for (auto& job : jobs_) {
      if (NeedsExitPolling(*job)) TryReap(job.get(), WNOHANG);
    }
  }
  MoveReapedJobs(finished);
}

void PosixProcessRunner::ReadOutput(Job* job) {
  ssize_t n = ::read(job->output.get(), read_buffer_.data(), read_buffer_.size());
  if (n > 0) {
    job->captured.append(read_buffer_.data(), static_cast<size_t>(n));
    return;
  }
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  // EOF (or an unreadable pipe, which would otherwise spin): the output is complete.
  job->output.reset();
  BeginWaitingForExit(job);
}

void PosixProcessRunner::BeginWaitingForExit(Job* job) {
  // EOF usually means the process is already gone, but the kernel closes a dying process's files
  // before it becomes waitable, so a pidfd covers the short gap (and any process that closed
  // its stdout/stderr early but keeps running).
  if (TryReap(job, WNOHANG)) return;
  job->pidfd = OpenPidFd(job->pid);
  // Without a pidfd, PollOnce falls back to periodic WNOHANG checks (NeedsExitPolling).
}

bool PosixProcessRunner::TryReap(Job* job, int options) {
  if (job->reaped) return true;
  pid_t result;
  do {
    result = ::wait4(job->pid, &job->wait_status, options, &job->usage);
  } while (result < 0 && errno == EINTR);
  if (result == 0) return false;
  if (result < 0) {
    // ECHILD: someone else reaped our child (e.g. a foreign waitpid(-1) or SIGCHLD set to
    // SIG_IGN). Report a failure rather than waiting forever for an exit we can never see.
    job->wait_status = W_EXITCODE(127, 0);
    job->captured += fmt::format("headroom: lost the exit status of pid {}: {}\n", job->pid, std::strerror(errno));
  }
  job->reaped = true;
  job->end_ms = MonotonicMs();
  job->pidfd.reset();
  return true;
}

void PosixProcessRunner::MoveReapedJobs(std::vector<JobExit>* finished) {
  auto is_done = [](const std::unique_ptr<Job>& job) { return job->reaped && !job->output.valid(); };
  for (auto& job : jobs_) {
    if (is_done(job)) finished->push_back(MakeExit(job.get()));
  }
  jobs_.erase(std::remove_if(jobs_.begin(), jobs_.end(), is_done), jobs_.end());
}

JobExit PosixProcessRunner::MakeExit(Job* job) {
  JobExit exit;
  exit.id = job->id;
  exit.pid = job->pid;
  exit.exited_normally = WIFEXITED(job->wait_status);
  exit.exit_code = exit.exited_normally ? WEXITSTATUS(job->wait_status) : 0;
  exit.term_signal = WIFSIGNALED(job->wait_status) ? WTERMSIG(job->wait_status) : 0;
  exit.output = std::move(job->captured);
  exit.max_rss_kb = job->usage.ru_maxrss;  // kilobytes on Linux
  exit.user_cpu_ms = TimevalMs(job->usage.ru_utime);
  exit.system_cpu_ms = TimevalMs(job->usage.ru_stime);
  exit.wall_ms = job->end_ms - job->start_ms;
  return exit;
}

Job* PosixProcessRunner::Find(JobId id) const {
  for (const auto& job : jobs_) {
    if (job->id == id) return job.get();
  }
  return nullptr;
}

pid_t PosixProcessRunner::PidOf(JobId id) const {
  Job* job = Find(id);
  return job ? job->pid : -1;
}

pid_t PosixProcessRunner::ProcessGroupOf(JobId id) const {
  Job* job = Find(id);
  if (!job) return -1;
  return job->console ? ::getpgrp() : job->pid;
}

bool PosixProcessRunner::SignalJobProcesses(const Job& job, int sig) const {
  if (job.reaped) return false;  // only possible after ECHILD: the pid may belong to someone else
  // A console job shares headroom's process group: signalling the group would hit headroom.
  return ::kill(job.console ? job.pid : -job.pid, sig) == 0;
}

bool PosixProcessRunner::SignalJob(JobId id, int sig) {
  Job* job = Find(id);
  return job && SignalJobProcesses(*job, sig);
}

bool PosixProcessRunner::LeaderHasExited(const Job& job) {
  if (job.reaped) return true;
  siginfo_t info = {};
  // WNOWAIT keeps the zombie, which keeps the process group id reserved for the sweep below.
  int rc = ::waitid(P_PID, static_cast<id_t>(job.pid), &info, WEXITED | WNOHANG | WNOWAIT);
  return rc < 0 || info.si_pid != 0;
}

// Signals every job, then waits for each leader to exit. When one has exited (a zombie, so the
// group id is still reserved) its remaining group members get SIGKILL before it is reaped, so no
// stray child survives. A further interrupt during the wait escalates to SIGKILL for everyone, so a
// job that ignores `sig` cannot hang headroom. Results of aborted jobs are discarded.
// Stragglers are not our children, so their death after that SIGKILL is asynchronous: AbortAll
// returns once they are doomed, possibly a moment before they are gone. A console job shares
// headroom's group, so only its leader is signalled and its own children are not swept.
void PosixProcessRunner::AbortAll(int sig) {
  if (jobs_.empty()) return;
  for (auto& job : jobs_) SignalJobProcesses(*job, sig);
  // Closing the read ends means a job blocked writing to a full pipe gets EPIPE/SIGPIPE instead of
  // waiting forever for us to drain it.
  for (auto& job : jobs_) job->output.reset();
  for (auto& job : jobs_) {
    if (!job->pidfd.valid() && !job->reaped) job->pidfd = OpenPidFd(job->pid);
  }
  const unsigned interrupts_before = interrupts_.count();
  bool escalated = sig == SIGKILL;
  while (!jobs_.empty()) {
    if (!escalated && interrupts_.count() != interrupts_before) {
      for (auto& job : jobs_) SignalJobProcesses(*job, SIGKILL);
      escalated = true;
    }
    for (auto& job : jobs_) {
      if (!LeaderHasExited(*job)) continue;
      if (!job->console && !job->reaped) ::kill(-job->pid, SIGKILL);
      TryReap(job.get(), 0);
    }
    jobs_.erase(std::remove_if(jobs_.begin(), jobs_.end(), [](const auto& job) { return job->reaped; }),
                jobs_.end());
    if (jobs_.empty()) break;

    pollfds_.clear();
    poll_targets_.clear();
    if (interrupts_.wake_fd() >= 0) AddPollFd(interrupts_.wake_fd(), FdRole::kWake, nullptr);
    bool exit_polling = false;
    for (auto& job : jobs_) {
      if (job->pidfd.valid()) {
        AddPollFd(job->pidfd.get(), FdRole::kExit, job.get());
      } else {
        exit_polling = true;
      }
    }
    PpollWithInterruptsUnblocked(exit_polling ? kExitPollIntervalMs : -1);
    interrupts_.DrainWakeFd();
  }
}

}  // namespace

std::unique_ptr<ProcessRunner> MakePosixProcessRunner() { return std::make_unique<PosixProcessRunner>(); }

}  // namespace headroom
