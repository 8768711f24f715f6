// Tests for the POSIX ProcessRunner with real processes: exit codes, output capture, process
// groups, console jobs, timeouts, job signals, interrupts, cgroup joining and resource usage.
#include "headroom/exec/process_runner.h"
#include "headroom/exec/prepared_launch.h"
#include "headroom/exec/spawn_resident.h"
#include "headroom/exec/child_stacks.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace headroom {
namespace {

bool RunningInCi() { return std::getenv("CI") != nullptr; }

#define SKIP_OR_FAIL_IN_CI(why)                                  \
  do {                                                           \
    if (RunningInCi()) FAIL() << "cannot run under CI: " << why; \
    GTEST_SKIP() << why;                                         \
  } while (0)

// Waits (without a timeout) until job `id` finishes; other finished jobs go to *others.
JobExit WaitFor(ProcessRunner& runner, JobId id, std::vector<JobExit>* others = nullptr) {
  for (;;) {
    std::vector<JobExit> finished;
    ProcessRunner::WaitResult result = runner.Wait(-1, &finished);
    // An interrupt is sticky (every later Wait reports it too), so looping here would spin.
    EXPECT_EQ(result, ProcessRunner::WaitResult::kJobsFinished);
    if (result != ProcessRunner::WaitResult::kJobsFinished) return JobExit{};
    JobExit wanted;
    for (JobExit& exit : finished) {
      if (exit.id == id) {
        wanted = std::move(exit);
      } else if (others) {
        others->push_back(std::move(exit));
      }
    }
    if (wanted.id == id) return wanted;
  }
}

JobExit RunCommand(const std::string& command, const JobStartOptions& options = {}) {
  auto runner = MakePosixProcessRunner();
  std::string err;
  JobId id = runner->Start(command, options, &err);
  EXPECT_GE(id, 0) << err;
  if (id < 0) return JobExit{};
  return WaitFor(*runner, id);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

// Fields of /proc/<pid>/stat after the command name: [0] is the state, [2] the process group.
std::vector<std::string> StatFieldsAfterComm(pid_t pid) {
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  std::vector<std::string> fields;
  size_t close_paren = stat.rfind(')');
  if (close_paren == std::string::npos) return fields;
  std::istringstream rest(stat.substr(close_paren + 1));
  for (std::string field; rest >> field;) fields.push_back(field);
  return fields;
}

char ProcessState(pid_t pid) {
  auto fields = StatFieldsAfterComm(pid);
  return fields.empty() ? '?' : fields[0][0];
}

// True if /proc/<pid>/status shows SIGKILL pending (per thread or shared): the process is doomed.
bool HasPendingSigkill(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("SigPnd:", 0) != 0 && line.rfind("ShdPnd:", 0) != 0) continue;
    uint64_t pending = std::stoull(line.substr(line.find_first_not_of(" \t", 7)), nullptr, 16);
    if (pending & (uint64_t{1} << (SIGKILL - 1))) return true;
  }
  return false;
}

// Processes in group `pgid` that would go on running. SIGKILL to a group is asynchronous and
// grandchildren cannot be waited for, so a member that is a zombie, already exiting (PF_EXITING in
// the stat flags) or has SIGKILL pending counts as gone.
int SurvivorsInGroup(pid_t pgid) {
  constexpr unsigned long kPfExiting = 0x4;
  int survivors = 0;
  DIR* proc = opendir("/proc");
  while (dirent* entry = readdir(proc)) {
    pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid <= 0) continue;
    auto fields = StatFieldsAfterComm(pid);  // [0] state, [2] pgrp, [6] flags
    if (fields.size() <= 6 || std::stoi(fields[2]) != pgid) continue;
    bool gone = fields[0] == "Z" || fields[0] == "X" || (std::stoul(fields[6]) & kPfExiting) ||
                HasPendingSigkill(pid);
    if (!gone) ++survivors;
  }
  closedir(proc);
  return survivors;
}

// A temporary directory with a FIFO the test controls. The test holds it O_RDWR for its whole
// life, so a job's open never blocks and data sent before the job opens it is not lost; jobs read
// one line (`head -n 1`, `read`) and so stay blocked exactly until the test sends one.
class ControlledFifo {
 public:
  ControlledFifo() {
    char dir_template[] = "/tmp/headroom-exec-XXXXXX";
    dir_ = mkdtemp(dir_template);
    path_ = dir_ + "/fifo";
    mkfifo(path_.c_str(), 0600);
    fd_ = open(path_.c_str(), O_RDWR | O_CLOEXEC);
  }
  ~ControlledFifo() {
    if (fd_ >= 0) close(fd_);
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  const std::string& path() const { return path_; }
  bool ok() const { return fd_ >= 0; }
  void SendLine(const std::string& line) {
    std::string data = line + "\n";
    EXPECT_EQ(write(fd_, data.data(), data.size()), static_cast<ssize_t>(data.size()));
  }
  // Reads one line a job wrote into the FIFO, waiting up to 30 s on the descriptor.
  std::string ReadLine() {
    std::string line;
    char c;
    pollfd pfd{fd_, POLLIN, 0};
    while (poll(&pfd, 1, 30000) == 1 && read(fd_, &c, 1) == 1 && c != '\n') line += c;
    return line;
  }

 private:
  std::string dir_, path_;
  int fd_ = -1;
};

TEST(ProcessRunnerTest, ExitCodes) {
  JobExit ok = RunCommand("exit 0");
  EXPECT_TRUE(ok.exited_normally);
  EXPECT_TRUE(ok.success());
  EXPECT_EQ(ok.ExitStatusCode(), 0);

  JobExit three = RunCommand("exit 3");
  EXPECT_TRUE(three.exited_normally);
  EXPECT_FALSE(three.success());
  EXPECT_EQ(three.exit_code, 3);
  EXPECT_EQ(three.ExitStatusCode(), 3);
}

TEST(ProcessRunnerTest, KilledBySignalReports128PlusSignal) {
  JobExit killed = RunCommand("kill -KILL $$");
  EXPECT_FALSE(killed.exited_normally);
  EXPECT_EQ(killed.term_signal, SIGKILL);
  EXPECT_EQ(killed.ExitStatusCode(), 128 + SIGKILL);

  JobExit terminated = RunCommand("kill -TERM $$");
  EXPECT_EQ(terminated.term_signal, SIGTERM);
  EXPECT_EQ(terminated.ExitStatusCode(), 128 + SIGTERM);
}

TEST(ProcessRunnerTest, StdoutAndStderrInterleaveInOrder) {
  JobExit exit = RunCommand("echo a; echo b >&2; echo c");
  EXPECT_EQ(exit.output, "a\nb\nc\n");
}

TEST(ProcessRunnerTest, LargeOutputDoesNotDeadlock) {
  JobExit exit = RunCommand("head -c 1048576 /dev/zero; echo tail >&2");
  ASSERT_EQ(exit.output.size(), 1048576u + 5);
  EXPECT_EQ(exit.output.substr(1048576), "tail\n");
  EXPECT_TRUE(exit.success());
}

TEST(ProcessRunnerTest, StdinIsDevNull) {
  JobExit exit = RunCommand("cat; readlink /proc/self/fd/0");
  EXPECT_EQ(exit.output, "/dev/null\n");
  EXPECT_TRUE(exit.success());
}

TEST(ProcessRunnerTest, EnvironmentIsInherited) {
  setenv("HEADROOM_EXEC_TEST_VAR", "inherited value", 1);
  JobExit exit = RunCommand("printf '%s' \"$HEADROOM_EXEC_TEST_VAR\"");
  unsetenv("HEADROOM_EXEC_TEST_VAR");
  EXPECT_EQ(exit.output, "inherited value");
}

// The hex mask on the "<name>:" line of /proc/<pid>/status text; bit n-1 stands for signal n.
uint64_t SignalMaskFromStatus(const std::string& status, const std::string& name) {
  size_t at = status.find(name + ":\t");
  if (at == std::string::npos) return ~uint64_t{0};
  return std::stoull(status.substr(at + name.size() + 2, 16), nullptr, 16);
}

// Signals 32..SIGRTMIN-1 belong to libc. glibc's posix_spawn sets the ones glibc handles to SIG_IGN
// in the child (outside our control, ninja's children see the same); the child's own libc
// reinstalls its handlers, so they are excluded from the check.
uint64_t LibcReservedSignalBits() {
  uint64_t bits = 0;
  for (int sig = 32; sig < SIGRTMIN; ++sig) bits |= uint64_t{1} << (sig - 1);
  return bits;
}

TEST(ProcessRunnerTest, SignalsResetAndUnblockedInChild) {
  // headroom ignoring SIGPIPE or blocking a signal must not leak into build commands.
  struct sigaction ignore = {}, previous_pipe;
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &previous_pipe);
  sigset_t usr1, previous_mask;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  sigprocmask(SIG_BLOCK, &usr1, &previous_mask);

  JobExit exit = RunCommand("grep -E '^Sig(Blk|Ign)' /proc/self/status");

  sigprocmask(SIG_SETMASK, &previous_mask, nullptr);
  sigaction(SIGPIPE, &previous_pipe, nullptr);
  EXPECT_EQ(SignalMaskFromStatus(exit.output, "SigBlk"), 0u) << exit.output;
  EXPECT_EQ(SignalMaskFromStatus(exit.output, "SigIgn") & ~LibcReservedSignalBits(), 0u) << exit.output;
}

TEST(ProcessRunnerTest, JobRunsInItsOwnProcessGroup) {
  auto runner = MakePosixProcessRunner();
  std::string err;
  // Field 5 of /proc/self/stat is the process group; `read` is a builtin, so "self" is the shell.
  JobId id = runner->Start("read -r pid comm state ppid pgrp rest < /proc/self/stat; echo $pgrp", {}, &err);
  ASSERT_GE(id, 0) << err;
  pid_t expected_group = runner->ProcessGroupOf(id);
  EXPECT_EQ(expected_group, runner->PidOf(id));
  JobExit exit = WaitFor(*runner, id);
  EXPECT_EQ(exit.output, std::to_string(expected_group) + "\n");
  EXPECT_NE(exit.output, std::to_string(getpgrp()) + "\n");
}

TEST(ProcessRunnerTest, ConsoleJobSharesHeadroomsProcessGroup) {
  char path_template[] = "/tmp/headroom-console-XXXXXX";
  int fd = mkstemp(path_template);
  ASSERT_GE(fd, 0);
  close(fd);
  std::string path = path_template;

  auto runner = MakePosixProcessRunner();
  JobStartOptions console;
  console.use_console = true;
  std::string err;
  JobId id = runner->Start("read -r pid comm state ppid pgrp rest < /proc/self/stat; echo $pgrp > " + path,
                           console, &err);
  ASSERT_GE(id, 0) << err;
  EXPECT_EQ(runner->ProcessGroupOf(id), getpgrp());
  JobExit exit = WaitFor(*runner, id);
  EXPECT_TRUE(exit.success());
  EXPECT_EQ(exit.output, "");
  EXPECT_EQ(ReadFile(path), std::to_string(getpgrp()) + "\n");
  unlink(path.c_str());
}

TEST(ProcessRunnerTest, ConsoleJobsThatExitAtOnceAreCollected) {
  // Regression: a console job can exit (and be reaped) inside Start, before it has a pidfd, so
  // nothing wakes ppoll for it. Many tries make hitting that window likely.
  auto runner = MakePosixProcessRunner();
  JobStartOptions console;
  console.use_console = true;
  std::string err;
  for (int i = 0; i < 200; ++i) {
    JobId id = runner->Start("exit 5", console, &err);
    ASSERT_GE(id, 0) << err;
    std::vector<JobExit> finished;
    ASSERT_EQ(runner->Wait(20000, &finished), ProcessRunner::WaitResult::kJobsFinished) << "try " << i;
    ASSERT_EQ(finished.size(), 1u);
    EXPECT_EQ(finished[0].exit_code, 5);
  }
}

TEST(ProcessRunnerTest, ManyParallelJobsAllFinish) {
  auto runner = MakePosixProcessRunner();
  std::map<JobId, int> expected;
  std::string err;
  for (int i = 0; i < 64; ++i) {
    JobId id = runner->Start("echo job" + std::to_string(i), {}, &err);
    ASSERT_GE(id, 0) << err;
    expected[id] = i;
  }
  EXPECT_EQ(runner->running_count(), 64u);
  std::vector<JobExit> finished;
  while (runner->running_count() > 0) {
    ASSERT_EQ(runner->Wait(-1, &finished), ProcessRunner::WaitResult::kJobsFinished);
  }
  ASSERT_EQ(finished.size(), 64u);
  for (const JobExit& exit : finished) {
    EXPECT_TRUE(exit.success());
    EXPECT_EQ(exit.output, "job" + std::to_string(expected.at(exit.id)) + "\n");
  }
}

TEST(ProcessRunnerTest, WaitWithNoJobsReturnsTimeout) {
  auto runner = MakePosixProcessRunner();
  std::vector<JobExit> finished;
  EXPECT_EQ(runner->Wait(-1, &finished), ProcessRunner::WaitResult::kTimeout);
  EXPECT_TRUE(finished.empty());
}

TEST(ProcessRunnerTest, WaitTimesOutWhileJobIsBlocked) {
  ControlledFifo fifo;
  ASSERT_TRUE(fifo.ok());
  auto runner = MakePosixProcessRunner();
  std::string err;
  JobId id = runner->Start("head -n 1 " + fifo.path(), {}, &err);
  ASSERT_GE(id, 0) << err;

  std::vector<JobExit> finished;
  auto before = std::chrono::steady_clock::now();
  EXPECT_EQ(runner->Wait(100, &finished), ProcessRunner::WaitResult::kTimeout);
  auto waited = std::chrono::steady_clock::now() - before;
  EXPECT_GE(waited, std::chrono::milliseconds(90));
  EXPECT_TRUE(finished.empty());
  EXPECT_EQ(runner->Wait(0, &finished), ProcessRunner::WaitResult::kTimeout);

  fifo.SendLine("released");
  JobExit exit = WaitFor(*runner, id);
  EXPECT_EQ(exit.output, "released\n");
  EXPECT_TRUE(exit.success());
}

TEST(ProcessRunnerTest, JobThatClosesOutputEarlyFinishesWhenItExits) {
  ControlledFifo fifo;
  ASSERT_TRUE(fifo.ok());
  auto runner = MakePosixProcessRunner();
  std::string err;
  // EOF arrives long before the exit: the runner must wait for the exit without spinning on EOF.
  JobId id = runner->Start("echo early; exec >&- 2>&-; read line < " + fifo.path() + "; exit 4", {}, &err);
  ASSERT_GE(id, 0) << err;
  std::vector<JobExit> finished;
  EXPECT_EQ(runner->Wait(100, &finished), ProcessRunner::WaitResult::kTimeout);
  fifo.SendLine("go");
  JobExit exit = WaitFor(*runner, id);
  EXPECT_EQ(exit.output, "early\n");
  EXPECT_EQ(exit.exit_code, 4);
}

TEST(ProcessRunnerTest, DaemonHoldingThePipeDelaysCompletionUntilEof) {
  ControlledFifo fifo;
  ASSERT_TRUE(fifo.ok());
  auto runner = MakePosixProcessRunner();
  std::string err;
  // ninja semantics: the shell exits at once, but its background child keeps the pipe open.
  JobId id = runner->Start("head -n 1 " + fifo.path() + " & echo started", {}, &err);
  ASSERT_GE(id, 0) << err;
  std::vector<JobExit> finished;
  EXPECT_EQ(runner->Wait(100, &finished), ProcessRunner::WaitResult::kTimeout);
  EXPECT_EQ(runner->running_count(), 1u);
  fifo.SendLine("daemon output");
  JobExit exit = WaitFor(*runner, id);
  EXPECT_TRUE(exit.success());
  EXPECT_EQ(exit.output, "started\ndaemon output\n");
}

TEST(ProcessRunnerTest, StopAndContinueThroughSignalJob) {
  ControlledFifo fifo;
  ASSERT_TRUE(fifo.ok());
  auto runner = MakePosixProcessRunner();
  std::string err;
  // Builtins only: a shell waiting in vfork for a child's exec cannot stop, so one process it is.
  JobId id = runner->Start("read -r line < " + fifo.path() + "; echo \"$line\"", {}, &err);
  ASSERT_GE(id, 0) << err;
  pid_t pid = runner->PidOf(id);

  ASSERT_TRUE(runner->SignalJob(id, SIGSTOP));
  siginfo_t info = {};
  // WNOWAIT: observe the stop without consuming anything the runner will need.
  ASSERT_EQ(waitid(P_PID, pid, &info, WSTOPPED | WNOWAIT), 0);
  EXPECT_EQ(info.si_code, CLD_STOPPED);
  EXPECT_EQ(ProcessState(pid), 'T');

  ASSERT_TRUE(runner->SignalJob(id, SIGCONT));
  EXPECT_NE(ProcessState(pid), 'T');
  fifo.SendLine("resumed");
  JobExit exit = WaitFor(*runner, id);
  EXPECT_EQ(exit.output, "resumed\n");
  EXPECT_TRUE(exit.success());
}

TEST(ProcessRunnerTest, SigkillTakesDownTheWholeJobTree) {
  ControlledFifo ready;
  ASSERT_TRUE(ready.ok());
  auto runner = MakePosixProcessRunner();
  std::string err;
  JobId id = runner->Start("sleep 100 & echo started > " + ready.path() + "; wait", {}, &err);
  ASSERT_GE(id, 0) << err;
  pid_t group = runner->ProcessGroupOf(id);
  ASSERT_EQ(ready.ReadLine(), "started");
  EXPECT_GE(SurvivorsInGroup(group), 2);  // the shell and the background sleep

  ASSERT_TRUE(runner->SignalJob(id, SIGKILL));
  JobExit exit = WaitFor(*runner, id);  // EOF needs the sleep (which holds the pipe) dead too
  EXPECT_EQ(exit.term_signal, SIGKILL);
  EXPECT_EQ(SurvivorsInGroup(group), 0);
}

TEST(ProcessRunnerTest, SignalJobOnUnknownIdFails) {
  auto runner = MakePosixProcessRunner();
  EXPECT_FALSE(runner->SignalJob(42, SIGTERM));
  EXPECT_EQ(runner->PidOf(42), -1);
  EXPECT_EQ(runner->ProcessGroupOf(42), -1);
}

TEST(ProcessRunnerTest, InterruptIsReportedAndAbortAllReaps) {
  ControlledFifo fifo;
  ASSERT_TRUE(fifo.ok());
  auto runner = MakePosixProcessRunner();
  std::string err;
  std::vector<pid_t> pids;
  for (int i = 0; i < 3; ++i) {
    // Builtins only: with a forked `head`, a SIGINT landing while dash is in vfork is swallowed by
    // dash (it waits for its child, which never got the signal) and the job would ignore it.
    JobId id = runner->Start("read -r line < " + fifo.path(), {}, &err);
    ASSERT_GE(id, 0) << err;
    pids.push_back(runner->PidOf(id));
  }
  EXPECT_EQ(runner->interrupt_signal(), 0);

  // The runner keeps SIGINT blocked outside ppoll, so this stays pending until Wait.
  raise(SIGINT);
  std::vector<JobExit> finished;
  EXPECT_EQ(runner->Wait(-1, &finished), ProcessRunner::WaitResult::kInterrupted);
  EXPECT_EQ(runner->interrupt_signal(), SIGINT);

  runner->AbortAll(SIGINT);
  EXPECT_EQ(runner->running_count(), 0u);
  for (pid_t pid : pids) {
    EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), -1) << "pid " << pid << " was not reaped";
    EXPECT_EQ(SurvivorsInGroup(pid), 0);
  }
}

TEST(ProcessRunnerTest, TerminateSentToProcessIsReported) {
  ControlledFifo fifo;
  ASSERT_TRUE(fifo.ok());
  auto runner = MakePosixProcessRunner();
  std::string err;
  ASSERT_GE(runner->Start("head -n 1 " + fifo.path(), {}, &err), 0) << err;
  kill(getpid(), SIGTERM);
  std::vector<JobExit> finished;
  EXPECT_EQ(runner->Wait(-1, &finished), ProcessRunner::WaitResult::kInterrupted);
  EXPECT_EQ(runner->interrupt_signal(), SIGTERM);
}

TEST(ProcessRunnerTest, SecondInterruptEscalatesAbortToSigkill) {
  ControlledFifo fifo, ready;
  ASSERT_TRUE(fifo.ok() && ready.ok());
  auto runner = MakePosixProcessRunner();
  std::string err;
  // The job (and head, which inherits the ignored disposition) ignores SIGTERM.
  JobId id = runner->Start("trap '' TERM; echo ready > " + ready.path() + "; head -n 1 " + fifo.path(), {}, &err);
  ASSERT_GE(id, 0) << err;
  pid_t group = runner->ProcessGroupOf(id);
  ASSERT_EQ(ready.ReadLine(), "ready");
  raise(SIGINT);  // delivered inside AbortAll's wait: the user pressing Ctrl-C again
  runner->AbortAll(SIGTERM);
  EXPECT_EQ(runner->running_count(), 0u);
  EXPECT_EQ(SurvivorsInGroup(group), 0);
}

TEST(ProcessRunnerTest, AbortAllKillsStragglersOfTheGroup) {
  ControlledFifo ready;
  ASSERT_TRUE(ready.ok());
  auto runner = MakePosixProcessRunner();
  std::string err;
  // The background child ignores SIGTERM; the shell does not. After the shell dies the rest of
  // the group must still be swept away.
  JobId id = runner->Start("(trap '' TERM; echo started > " + ready.path() + "; exec sleep 100) & wait", {}, &err);
  ASSERT_GE(id, 0) << err;
  pid_t group = runner->ProcessGroupOf(id);
  ASSERT_EQ(ready.ReadLine(), "started");
  runner->AbortAll(SIGTERM);
  EXPECT_EQ(runner->running_count(), 0u);
  EXPECT_EQ(SurvivorsInGroup(group), 0);
}

TEST(ProcessRunnerTest, DestructorKillsAndReapsRunningJobs) {
  ControlledFifo fifo;
  ASSERT_TRUE(fifo.ok());
  pid_t pid;
  {
    auto runner = MakePosixProcessRunner();
    std::string err;
    JobId id = runner->Start("head -n 1 " + fifo.path(), {}, &err);
    ASSERT_GE(id, 0) << err;
    pid = runner->PidOf(id);
  }
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD);
  EXPECT_EQ(SurvivorsInGroup(pid), 0);
}

TEST(ProcessRunnerTest, ResourceUsageIsReported) {
  JobExit exit = RunCommand("head -c 4000000 /dev/zero | wc -c");
  EXPECT_EQ(exit.output, "4000000\n");
  EXPECT_GT(exit.max_rss_kb, 0);
  EXPECT_GE(exit.user_cpu_ms, 0);
  EXPECT_GE(exit.system_cpu_ms, 0);
  EXPECT_GE(exit.wall_ms, 0);
  EXPECT_LT(exit.wall_ms, 60000);
}

TEST(ProcessRunnerTest, WallTimeCoversTheJobsLifetime) {
  ControlledFifo fifo;
  ASSERT_TRUE(fifo.ok());
  auto runner = MakePosixProcessRunner();
  std::string err;
  JobId id = runner->Start("head -n 1 " + fifo.path(), {}, &err);
  ASSERT_GE(id, 0) << err;
  std::vector<JobExit> finished;
  ASSERT_EQ(runner->Wait(150, &finished), ProcessRunner::WaitResult::kTimeout);
  fifo.SendLine("x");
  JobExit exit = WaitFor(*runner, id);
  EXPECT_GE(exit.wall_ms, 140);
  EXPECT_LT(exit.wall_ms, 60000);
}

// Children of this process in any state, zombies included (field 4 of /proc/<pid>/stat: ppid).
int ChildrenOfThisProcess() {
  int children = 0;
  DIR* proc = opendir("/proc");
  while (dirent* entry = readdir(proc)) {
    pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    auto fields = StatFieldsAfterComm(pid);
    if (pid > 0 && fields.size() > 1 && std::stoi(fields[1]) == getpid()) ++children;
  }
  closedir(proc);
  return children;
}

TEST(ProcessRunnerTest, JoiningMissingCgroupFailsStart) {
  const int children_before = ChildrenOfThisProcess();
  auto runner = MakePosixProcessRunner();
  JobStartOptions options;
  options.cgroup_dir = "/nonexistent/headroom-cgroup";
  std::string err;
  EXPECT_EQ(runner->Start("echo should not run", options, &err), -1);
  EXPECT_NE(err.find("/nonexistent/headroom-cgroup"), std::string::npos) << err;
  EXPECT_NE(err.find("cgroup"), std::string::npos) << err;
  EXPECT_EQ(runner->running_count(), 0u);
  EXPECT_EQ(ChildrenOfThisProcess(), children_before);  // the failed child was reaped
}

// The v1 memory cgroup this process is in, as a directory path; empty if there is none.
std::string OwnMemoryCgroupDir() {
  std::ifstream cgroups("/proc/self/cgroup");
  for (std::string line; std::getline(cgroups, line);) {
    // hierarchy-id:controller-list:path
    size_t first = line.find(':');
    size_t second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    std::string controllers = "," + line.substr(first + 1, second - first - 1) + ",";
    if (controllers.find(",memory,") == std::string::npos) continue;
    std::string dir = "/sys/fs/cgroup/memory" + line.substr(second + 1);
    struct stat st;
    if (stat((dir + "/cgroup.procs").c_str(), &st) == 0) return dir;
  }
  return "";
}

// A fresh cgroup `<parent>/<prefix><pid>` for one test; empty with *why set when it cannot be made here (not root,
// no such hierarchy, mkdir refused).
std::string MakeTestCgroup(const std::string& parent, const std::string& what, const std::string& prefix,
                           std::string* why) {
  if (geteuid() != 0) {
    *why = "making a cgroup needs root";
    return "";
  }
  if (parent.empty()) {
    *why = "no " + what + " hierarchy for this process";
    return "";
  }
  std::string dir = parent + "/" + prefix + std::to_string(getpid());
  if (mkdir(dir.c_str(), 0755) != 0) {
    *why = "cannot create " + dir + ": " + strerror(errno);
    return "";
  }
  return dir;
}

// Runs `command` as a job in `cgroup_dir` to its end. The exit's id is -1 (and *err says why) when it did not start.
JobExit RunJobInCgroup(const std::string& cgroup_dir, const std::string& command, std::string* err) {
  auto runner = MakePosixProcessRunner();
  JobStartOptions options;
  options.cgroup_dir = cgroup_dir;
  JobId id = runner->Start(command, options, err);
  if (id < 0) return JobExit{};
  return WaitFor(*runner, id);
}

TEST(ProcessRunnerTest, JobJoinsTheGivenCgroupBeforeExec) {
  std::string why;
  std::string dir = MakeTestCgroup(OwnMemoryCgroupDir(), "cgroup v1 memory", "headroom-exec-test-", &why);
  if (dir.empty()) SKIP_OR_FAIL_IN_CI(why);

  std::string err;
  JobExit exit = RunJobInCgroup(dir, "cat /proc/self/cgroup; echo done >&2", &err);
  EXPECT_EQ(rmdir(dir.c_str()), 0) << strerror(errno);

  ASSERT_GE(exit.id, 0) << err;
  EXPECT_TRUE(exit.success());
  std::string relative = dir.substr(std::string("/sys/fs/cgroup/memory").size());
  EXPECT_NE(exit.output.find("memory:" + relative + "\n"), std::string::npos) << exit.output;
  EXPECT_NE(exit.output.find("done\n"), std::string::npos);
}

// This process's cgroup in the v2 (unified) hierarchy, as a directory path; empty if there is none. On a v1 host
// the unified hierarchy (systemd's "hybrid" mount) holds no controllers but takes processes all the same.
std::string OwnV2CgroupDir() {
  std::string mount;
  std::ifstream mounts("/proc/self/mountinfo");
  for (std::string line; std::getline(mounts, line);) {
    // ... mount-point options - fstype source super-options
    std::istringstream fields(line);
    std::vector<std::string> words{std::istream_iterator<std::string>(fields), std::istream_iterator<std::string>()};
    auto dash = std::find(words.begin(), words.end(), "-");
    if (words.size() > 4 && dash != words.end() && dash + 1 != words.end() && *(dash + 1) == "cgroup2") {
      mount = words[4];
      break;
    }
  }
  if (mount.empty()) return "";
  std::ifstream cgroups("/proc/self/cgroup");
  for (std::string line; std::getline(cgroups, line);) {
    if (line.rfind("0::", 0) == 0) return mount + (line.substr(3) == "/" ? "" : line.substr(3));
  }
  return "";
}

// On cgroup v2 the child is born in the job's cgroup (clone3 CLONE_INTO_CGROUP) instead of joining it after birth,
// which waits for an RCU grace period (~11 ms a job, docs/memory-observation.md); it is there from its first
// instruction, and the shell it runs sees that cgroup as its own.
TEST(ProcessRunnerTest, JobIsBornInAGivenV2Cgroup) {
  std::string why;
  std::string dir = MakeTestCgroup(OwnV2CgroupDir(), "cgroup v2", "headroom-exec-v2-", &why);
  if (dir.empty()) SKIP_OR_FAIL_IN_CI(why);

  std::string err;
  JobExit exit = RunJobInCgroup(dir, "cat /proc/self/cgroup; echo done >&2; exit 3", &err);
  // A failed exec is reported as before on this path too.
  std::string missing_err;
  JobExit missing_exit = RunJobInCgroup(dir, "exec /nonexistent/command", &missing_err);
  EXPECT_EQ(rmdir(dir.c_str()), 0) << strerror(errno);

  ASSERT_GE(exit.id, 0) << err;
  EXPECT_EQ(exit.ExitStatusCode(), 3);
  std::string relative = dir.substr(dir.find("/headroom-exec-v2-"));
  EXPECT_NE(exit.output.find("0::"), std::string::npos) << exit.output;
  EXPECT_NE(exit.output.find(relative + "\n"), std::string::npos) << exit.output;
  EXPECT_NE(exit.output.find("done\n"), std::string::npos);
  ASSERT_GE(missing_exit.id, 0) << missing_err;
  EXPECT_EQ(missing_exit.ExitStatusCode(), 127);
}

TEST(ProcessRunnerTest, ConsoleJobCanJoinCgroupToo) {
  std::string why;
  std::string dir = MakeTestCgroup(OwnMemoryCgroupDir(), "cgroup v1 memory", "headroom-exec-console-", &why);
  if (dir.empty()) SKIP_OR_FAIL_IN_CI(why);

  auto runner = MakePosixProcessRunner();
  JobStartOptions options;
  options.cgroup_dir = dir;
  options.use_console = true;
  std::string err;
  JobId id = runner->Start("grep -q " + dir.substr(std::string("/sys/fs/cgroup/memory").size()) +
                               " /proc/self/cgroup && exit 7",
                           options, &err);
  JobExit exit;
  if (id >= 0) {
    EXPECT_EQ(runner->ProcessGroupOf(id), getpgrp());
    exit = WaitFor(*runner, id);
  }
  EXPECT_EQ(rmdir(dir.c_str()), 0) << strerror(errno);
  ASSERT_GE(id, 0) << err;
  EXPECT_EQ(exit.exit_code, 7);
}

// --- Prepared launches (prepared_launch.h): a child that joined the job's cgroup ahead of time takes the job.

// A prepared child in a fresh v1 memory cgroup, reported ready; skips (fails in CI) where no cgroup can be made.
// In sanitized builds prepared launches are off by design: Start says so, and the caller's test ends there.
struct PreparedInCgroup {
  std::string dir;
  std::unique_ptr<PreparedLaunch> launch;
};

// `start(dir, &err)` in a fresh v1 memory cgroup *dir; false with *why when there is none (empty: a sanitized
// build, where starting must refuse and say so, which is asserted here).
template <typename T, typename StartFn>
bool StartInFreshCgroup(const std::string& prefix, StartFn start, std::string* dir, std::unique_ptr<T>* out,
                        std::string* why) {
  *dir = MakeTestCgroup(OwnMemoryCgroupDir(), "cgroup v1 memory", prefix, why);
  if (dir->empty()) return false;
  std::string err;
  *out = start(*dir, &err);
  if (!PreparedLaunch::Supported()) {
    EXPECT_EQ(*out, nullptr);
    EXPECT_NE(err.find("sanitizers"), std::string::npos) << err;
    rmdir(dir->c_str());
    *why = "";
    return false;
  }
  EXPECT_NE(*out, nullptr) << err;
  return *out != nullptr;
}

bool StartPreparedInCgroup(const std::string& prefix, PreparedInCgroup* out, std::string* why) {
  auto start = [](const std::string& dir, std::string* err) { return PreparedLaunch::Start(dir, nullptr, err); };
  return StartInFreshCgroup(prefix, start, &out->dir, &out->launch, why);
}

// Everything a job's output pipe carries, to EOF.
std::string ReadUntilEof(int fd) {
  std::string output;
  char buffer[512];
  for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;) output.append(buffer, static_cast<size_t>(n));
  return output;
}

std::vector<pid_t> PidsInCgroup(const std::string& dir) {
  std::ifstream procs(dir + "/cgroup.procs");
  std::vector<pid_t> pids;
  for (pid_t pid; procs >> pid;) pids.push_back(pid);
  return pids;
}

// Declares `var` of Type, started by `starter`; the test ends there (skipped, or failed in CI) when it cannot be.
#define START_OR_RETURN(Type, starter, prefix, var)  \
  Type var;                                         \
  {                                                 \
    std::string why;                                \
    if (!starter(prefix, &var, &why)) {             \
      if (!why.empty()) SKIP_OR_FAIL_IN_CI(why);    \
      return;                                       \
    }                                               \
  }
#define START_PREPARED_OR_RETURN(prefix, var) START_OR_RETURN(PreparedInCgroup, StartPreparedInCgroup, prefix, var)

TEST(PreparedLaunchTest, AJobHandedToAPreparedChildRunsInItsCgroupWithItsEnvironmentAndGroup) {
  const int children_before = ChildrenOfThisProcess();
  START_PREPARED_OR_RETURN("headroom-prepared-run-", prepared);
  ASSERT_EQ(prepared.launch->Poll(5'000), PreparedLaunch::State::kReady);
  const std::vector<pid_t> waiting = PidsInCgroup(prepared.dir);
  ASSERT_EQ(waiting.size(), 1u) << "the waiting child is already in the cgroup";

  auto runner = MakePosixProcessRunner();
  JobStartOptions options;
  options.cgroup_dir = prepared.dir;
  options.prepared = prepared.launch.get();
  options.environment = {"HEADROOM_PREPARED_TEST=handed"};
  std::string err;
  JobId id = runner->Start(
      "cat /proc/self/cgroup; echo \"var=$HEADROOM_PREPARED_TEST\"; read -r pid comm state ppid pgrp rest < /proc/$$/stat;"
      " echo \"pid=$pid pgrp=$pgrp\"; read -r line; echo \"stdin=[$line]\"; echo done >&2; exit 4",
      options, &err);
  ASSERT_GE(id, 0) << err;
  const pid_t pid = runner->PidOf(id);
  EXPECT_EQ(pid, waiting[0]) << "the job ran as the waiting child, not through the ordinary launch";
  EXPECT_EQ(runner->ProcessGroupOf(id), pid);
  JobExit exit = WaitFor(*runner, id);
  EXPECT_EQ(rmdir(prepared.dir.c_str()), 0) << strerror(errno);

  EXPECT_EQ(exit.ExitStatusCode(), 4);
  std::string relative = prepared.dir.substr(std::string("/sys/fs/cgroup/memory").size());
  EXPECT_NE(exit.output.find("memory:" + relative + "\n"), std::string::npos) << exit.output;
  EXPECT_NE(exit.output.find("var=handed\n"), std::string::npos) << exit.output;
  EXPECT_NE(exit.output.find(fmt::format("pid={} pgrp={}\n", pid, pid)), std::string::npos) << exit.output;
  EXPECT_NE(exit.output.find("stdin=[]\n"), std::string::npos) << exit.output;  // /dev/null
  EXPECT_NE(exit.output.find("done\n"), std::string::npos) << exit.output;
  EXPECT_EQ(ChildrenOfThisProcess(), children_before);
}

// Hand does not wait for the exec: what the child still reads must be its own copy, since the caller's command and
// environment may be gone (and their memory reused) the moment Hand returns. Several in a row also reuse the stacks
// and plans of children that have exec'd.
TEST(PreparedLaunchTest, AHandedChildExecsItsOwnCopyOfTheCommandAfterTheCallersIsGone) {
  for (int round = 0; round < 8; ++round) {
    START_PREPARED_OR_RETURN("headroom-prepared-copy-", prepared);
    ASSERT_EQ(prepared.launch->Poll(5'000), PreparedLaunch::State::kReady);
    auto command = std::make_unique<std::string>(fmt::format("echo \"round {} $HEADROOM_PREPARED_TEST\"", round));
    auto environment = std::make_unique<std::vector<std::string>>(
        std::vector<std::string>{fmt::format("HEADROOM_PREPARED_TEST=env{}", round)});
    int output_read = -1;
    std::string err;
    const pid_t pid = prepared.launch->Hand(*command, *environment, 5'000, &output_read, &err);
    ASSERT_GT(pid, 0) << err;
    command->assign(command->size(), 'X');  // overwritten and freed before the child may have exec'd
    (*environment)[0].assign((*environment)[0].size(), 'Y');
    command.reset();
    environment.reset();
    const std::string output = ReadUntilEof(output_read);
    close(output_read);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    EXPECT_EQ(output, fmt::format("round {} env{}\n", round, round));
    EXPECT_EQ(rmdir(prepared.dir.c_str()), 0) << strerror(errno);
  }
}

// A command too long for exec (one string over 128 KiB: E2BIG) is the one a child is waited for: the failure comes
// back from Hand, and the ordinary launch then reports it as ninja does.
TEST(PreparedLaunchTest, ACommandTooLongForExecFailsInHandWithTheReason) {
  const int children_before = ChildrenOfThisProcess();
  START_PREPARED_OR_RETURN("headroom-prepared-e2big-", prepared);
  ASSERT_EQ(prepared.launch->Poll(5'000), PreparedLaunch::State::kReady);
  int output_read = -1;
  std::string err;
  EXPECT_EQ(prepared.launch->Hand("echo " + std::string(200 * 1024, 'x'), {}, 5'000, &output_read, &err), -1);
  EXPECT_NE(err.find("Argument list too long"), std::string::npos) << err;
  EXPECT_TRUE(PidsInCgroup(prepared.dir).empty());
  EXPECT_EQ(rmdir(prepared.dir.c_str()), 0) << strerror(errno);
  EXPECT_EQ(ChildrenOfThisProcess(), children_before);
}

TEST(PreparedLaunchTest, ADiscardedChildIsReapedAndLeavesItsCgroupEmpty) {
  const int children_before = ChildrenOfThisProcess();
  START_PREPARED_OR_RETURN("headroom-prepared-discard-", prepared);
  ASSERT_EQ(prepared.launch->Poll(5'000), PreparedLaunch::State::kReady);
  ASSERT_EQ(PidsInCgroup(prepared.dir).size(), 1u);
  prepared.launch->Discard();
  EXPECT_TRUE(PidsInCgroup(prepared.dir).empty());
  EXPECT_EQ(rmdir(prepared.dir.c_str()), 0) << strerror(errno);
  EXPECT_EQ(ChildrenOfThisProcess(), children_before);
}

// The waiting child must not hold headroom's own descriptors: a pipe's write end kept open there would hide EOF from
// its reader (the build guard's watcher waits for exactly that when headroom dies).
TEST(PreparedLaunchTest, AWaitingChildHoldsNoneOfHeadroomsCloseOnExecDescriptors) {
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  START_PREPARED_OR_RETURN("headroom-prepared-fds-", prepared);
  ASSERT_EQ(prepared.launch->Poll(5'000), PreparedLaunch::State::kReady);
  close(fds[1]);
  pollfd reader{fds[0], POLLIN, 0};
  EXPECT_EQ(poll(&reader, 1, 0), 1);
  EXPECT_NE(reader.revents & POLLHUP, 0) << "the write end is still open somewhere";
  close(fds[0]);
  prepared.launch->Discard();
  EXPECT_EQ(rmdir(prepared.dir.c_str()), 0) << strerror(errno);
}

TEST(PreparedLaunchTest, AChildThatCannotJoinGivesWayToTheOrdinaryLaunchAndItsError) {
  if (!PreparedLaunch::Supported()) GTEST_SKIP() << "prepared launches are off in sanitized builds (asserted above)";
  const int children_before = ChildrenOfThisProcess();
  std::string err;
  auto launch = PreparedLaunch::Start("/nonexistent/headroom-cgroup", nullptr, &err);
  ASSERT_NE(launch, nullptr) << err;
  EXPECT_EQ(launch->Poll(5'000), PreparedLaunch::State::kFailed);
  int output_read = -1;
  std::string hand_err;
  EXPECT_EQ(launch->Hand("echo should not run", {}, 0, &output_read, &hand_err), -1);
  EXPECT_NE(hand_err.find("cannot join '/nonexistent/headroom-cgroup/cgroup.procs'"), std::string::npos) << hand_err;
  auto runner = MakePosixProcessRunner();
  JobStartOptions options;
  options.cgroup_dir = "/nonexistent/headroom-cgroup";
  options.prepared = launch.get();
  EXPECT_EQ(runner->Start("echo should not run", options, &err), -1);
  EXPECT_NE(err.find("cannot join cgroup '/nonexistent/headroom-cgroup'"), std::string::npos) << err;
  EXPECT_EQ(ChildrenOfThisProcess(), children_before);
}

// A console job needs the terminal's process group, which the prepared child left: it is discarded, and the job joins.
TEST(PreparedLaunchTest, AConsoleJobDiscardsThePreparedChildAndJoinsItself) {
  START_PREPARED_OR_RETURN("headroom-prepared-console-", prepared);
  auto runner = MakePosixProcessRunner();
  JobStartOptions options;
  options.cgroup_dir = prepared.dir;
  options.prepared = prepared.launch.get();
  options.use_console = true;
  std::string err;
  JobId id = runner->Start("grep -q " + prepared.dir.substr(std::string("/sys/fs/cgroup/memory").size()) +
                               " /proc/self/cgroup && exit 7",
                           options, &err);
  ASSERT_GE(id, 0) << err;
  EXPECT_EQ(runner->ProcessGroupOf(id), getpgrp());
  JobExit exit = WaitFor(*runner, id);
  EXPECT_EQ(exit.exit_code, 7);
  EXPECT_TRUE(PidsInCgroup(prepared.dir).empty()) << "the prepared child was left waiting";
  EXPECT_EQ(rmdir(prepared.dir.c_str()), 0) << strerror(errno);
}

// A waiting child must not outlive a headroom that dies without discarding it (SIGKILL): PR_SET_PDEATHSIG. Here a
// forked process plays headroom and exits at once, the child still waiting.
TEST(PreparedLaunchTest, AWaitingChildDiesWithHeadroom) {
  START_PREPARED_OR_RETURN("headroom-prepared-orphan-", prepared);
  prepared.launch->Discard();  // only the cgroup is used below
  int report[2], proceed[2];
  ASSERT_EQ(pipe(report), 0);
  ASSERT_EQ(pipe(proceed), 0);
  pid_t headroom = fork();
  ASSERT_GE(headroom, 0);
  if (headroom == 0) {
    std::string err;
    auto launch = PreparedLaunch::Start(prepared.dir, nullptr, &err);
    pid_t waiting = 0;
    if (launch && launch->Poll(5'000) == PreparedLaunch::State::kReady) waiting = PidsInCgroup(prepared.dir).at(0);
    [[maybe_unused]] ssize_t written = write(report[1], &waiting, sizeof waiting);
    char go;
    [[maybe_unused]] ssize_t got = read(proceed[0], &go, 1);
    _exit(0);  // no destructors: the child is left as a SIGKILLed headroom would leave it
  }
  pid_t waiting = 0;
  ASSERT_EQ(read(report[0], &waiting, sizeof waiting), static_cast<ssize_t>(sizeof waiting));
  ASSERT_GT(waiting, 0);
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, waiting, 0));
  ASSERT_GE(pidfd, 0) << strerror(errno);
  ASSERT_EQ(write(proceed[1], "x", 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(headroom, &status, 0), headroom);
  pollfd exited{pidfd, POLLIN, 0};
  EXPECT_EQ(poll(&exited, 1, 10'000), 1) << "the waiting child outlived its headroom";
  close(pidfd);
  for (int fd : {report[0], report[1], proceed[0], proceed[1]}) close(fd);
  EXPECT_EQ(rmdir(prepared.dir.c_str()), 0) << strerror(errno);
}

// --- Spawn residents (spawn_resident.h): a child that stays in a cgroup and clones each prepared child there.

// The parent (field 4) and name (field 2) of a process, from /proc/<pid>/stat.
pid_t ParentOf(pid_t pid) {
  auto fields = StatFieldsAfterComm(pid);
  return fields.size() > 1 ? std::stoi(fields[1]) : -1;
}

std::string NameOf(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t open = text.find('(');
  const size_t close = text.rfind(')');
  return open == std::string::npos || close == std::string::npos ? "" : text.substr(open + 1, close - open - 1);
}

// Waits (without sleeping) until `pid` has exited: its pidfd turns readable.
bool WaitForExitOf(pid_t pid) {
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) return errno == ESRCH;
  pollfd exited{pidfd, POLLIN, 0};
  const bool done = poll(&exited, 1, 10'000) == 1;
  close(pidfd);
  return done;
}

struct ResidentInCgroup {
  std::string dir;
  std::unique_ptr<SpawnResident> resident;
};

bool StartResidentInCgroup(const std::string& prefix, ResidentInCgroup* out, std::string* why) {
  return StartInFreshCgroup(prefix, SpawnResident::Start, &out->dir, &out->resident, why);
}

#define START_RESIDENT_OR_RETURN(prefix, var) START_OR_RETURN(ResidentInCgroup, StartResidentInCgroup, prefix, var)

// Each prepared child is cloned by the resident inside the cgroup (it never joins: the resident's plan has no
// cgroup to join), as headroom's own child: headroom reaps it. The resident stays, one process, across the jobs.
TEST(SpawnResidentTest, ItClonesEachPreparedChildInItsCgroupAsHeadroomsChild) {
  const int children_before = ChildrenOfThisProcess();
  START_RESIDENT_OR_RETURN("headroom-resident-run-", in);
  const pid_t resident = in.resident->pid();
  EXPECT_EQ(ParentOf(resident), getpid());
  std::string relative = in.dir.substr(std::string("/sys/fs/cgroup/memory").size());
  for (int round = 0; round < 4; ++round) {
    std::string err;
    auto launch = PreparedLaunch::Start(in.dir, in.resident.get(), &err);
    ASSERT_NE(launch, nullptr) << err;
    ASSERT_EQ(launch->Poll(5'000), PreparedLaunch::State::kReady);
    std::vector<pid_t> in_cgroup = PidsInCgroup(in.dir);
    std::sort(in_cgroup.begin(), in_cgroup.end());
    ASSERT_EQ(in_cgroup.size(), 2u) << "the resident and the waiting child";
    const pid_t waiting = in_cgroup[0] == resident ? in_cgroup[1] : in_cgroup[0];
    EXPECT_EQ(ParentOf(waiting), getpid()) << "cloned with CLONE_PARENT";
    EXPECT_EQ(NameOf(resident), SpawnResident::kProcessName);
    int output_read = -1;
    const pid_t pid = launch->Hand(fmt::format("cat /proc/self/cgroup; echo round {}", round), {}, 5'000,
                                   &output_read, &err);
    ASSERT_EQ(pid, waiting) << err;
    const std::string output = ReadUntilEof(output_read);
    close(output_read);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    EXPECT_NE(output.find("memory:" + relative + "\n"), std::string::npos) << output;
    EXPECT_NE(output.find(fmt::format("round {}\n", round)), std::string::npos) << output;
    EXPECT_EQ(PidsInCgroup(in.dir), std::vector<pid_t>{resident});
  }
  in.resident.reset();
  EXPECT_TRUE(PidsInCgroup(in.dir).empty());
  EXPECT_EQ(rmdir(in.dir.c_str()), 0) << strerror(errno);
  EXPECT_EQ(ChildrenOfThisProcess(), children_before);
}

// Discarding a child the resident was asked for waits for the clone, then kills and reaps the child; the resident
// serves the next request as before. Discarded at once, before the child could report, and after it did.
TEST(SpawnResidentTest, ADiscardedChildIsKilledAndReapedAndTheResidentGoesOn) {
  const int children_before = ChildrenOfThisProcess();
  START_RESIDENT_OR_RETURN("headroom-resident-discard-", in);
  for (bool wait_for_ready : {false, true, false}) {
    std::string err;
    auto launch = PreparedLaunch::Start(in.dir, in.resident.get(), &err);
    ASSERT_NE(launch, nullptr) << err;
    if (wait_for_ready) ASSERT_EQ(launch->Poll(5'000), PreparedLaunch::State::kReady);
    launch->Discard();
    EXPECT_EQ(PidsInCgroup(in.dir), std::vector<pid_t>{in.resident->pid()});
    EXPECT_EQ(ChildrenOfThisProcess(), children_before + 1) << "the resident only";
  }
  in.resident.reset();
  EXPECT_EQ(rmdir(in.dir.c_str()), 0) << strerror(errno);
  EXPECT_EQ(ChildrenOfThisProcess(), children_before);
}

// The descriptors the child needs are headroom's until the child holds its own: the resident closes headroom's
// copies, so the job's output reads EOF at the job's end and nothing is left open.
TEST(SpawnResidentTest, HeadroomKeepsNoCopyOfTheChildsDescriptors) {
  START_RESIDENT_OR_RETURN("headroom-resident-fds-", in);
  auto count_descriptors = [] {
    int count = 0;
    DIR* dir = opendir("/proc/self/fd");
    while (readdir(dir) != nullptr) ++count;
    closedir(dir);
    return count;
  };
  const int before = count_descriptors();
  std::string err;
  auto launch = PreparedLaunch::Start(in.dir, in.resident.get(), &err);
  ASSERT_NE(launch, nullptr) << err;
  ASSERT_EQ(launch->Poll(5'000), PreparedLaunch::State::kReady);
  int output_read = -1;
  const pid_t pid = launch->Hand("echo hi", {}, 5'000, &output_read, &err);
  ASSERT_GT(pid, 0) << err;
  const std::string output = ReadUntilEof(output_read);
  EXPECT_EQ(output, "hi\n") << "EOF came";
  close(output_read);
  ASSERT_EQ(waitpid(pid, nullptr, 0), pid);
  launch.reset();
  // The handed child's socket is let go by the next launch's sweep.
  auto next = PreparedLaunch::Start(in.dir, in.resident.get(), &err);
  ASSERT_NE(next, nullptr) << err;
  ASSERT_EQ(next->Poll(5'000), PreparedLaunch::State::kReady);
  next->Discard();
  next.reset();
  EXPECT_EQ(count_descriptors(), before);
  in.resident.reset();
  EXPECT_EQ(rmdir(in.dir.c_str()), 0) << strerror(errno);
}

// A resident that cannot join its cgroup clones nothing: each request fails, with the reason.
TEST(SpawnResidentTest, AResidentThatCannotJoinFailsItsRequestsWithTheReason) {
  if (!PreparedLaunch::Supported()) GTEST_SKIP() << "prepared launches are off in sanitized builds";
  const int children_before = ChildrenOfThisProcess();
  std::string err;
  auto resident = SpawnResident::Start("/nonexistent/headroom-cgroup", &err);
  ASSERT_NE(resident, nullptr) << err;
  auto launch = PreparedLaunch::Start("/nonexistent/headroom-cgroup", resident.get(), &err);
  ASSERT_NE(launch, nullptr) << err;
  EXPECT_EQ(launch->Poll(5'000), PreparedLaunch::State::kFailed);
  int output_read = -1;
  std::string hand_err;
  EXPECT_EQ(launch->Hand("echo should not run", {}, 0, &output_read, &hand_err), -1);
  EXPECT_NE(hand_err.find("No such file or directory"), std::string::npos) << hand_err;
  launch.reset();
  resident.reset();
  EXPECT_EQ(ChildrenOfThisProcess(), children_before);
}

// A resident killed from outside is seen gone without a system call (the kernel clears its word at its exit), and
// a launch that asks it fails at once instead of waiting for a child that never comes.
TEST(SpawnResidentTest, AKilledResidentIsSeenGoneAndItsCgroupsLaunchesFail) {
  START_RESIDENT_OR_RETURN("headroom-resident-killed-", in);
  EXPECT_TRUE(in.resident->Alive());
  ASSERT_EQ(kill(in.resident->pid(), SIGKILL), 0);
  ASSERT_TRUE(WaitForExitOf(in.resident->pid()));
  EXPECT_FALSE(in.resident->Alive());
  std::string err;
  EXPECT_EQ(PreparedLaunch::Start(in.dir, in.resident.get(), &err), nullptr);
  EXPECT_NE(err.find("resident is gone"), std::string::npos) << err;
  in.resident.reset();  // reaps it
  EXPECT_EQ(rmdir(in.dir.c_str()), 0) << strerror(errno);
}

// The children's stacks are 1 KiB slots packed into shared pages, with no guard page between them: the deepest any
// child reached, on its way to the exec and on its way to a failure report, must stay far inside its slot.
TEST(ChildStacksTest, ChildrenStayFarInsideTheirStackSlots) {
  START_RESIDENT_OR_RETURN("headroom-resident-stack-", in);
  std::string err;
  for (const std::string& command : {std::string("true"), "echo " + std::string(200 * 1024, 'x')}) {
    auto launch = PreparedLaunch::Start(in.dir, in.resident.get(), &err);
    ASSERT_NE(launch, nullptr) << err;
    ASSERT_EQ(launch->Poll(5'000), PreparedLaunch::State::kReady);
    int output_read = -1;
    const pid_t pid = launch->Hand(command, {}, 5'000, &output_read, &err);
    if (pid > 0) {
      close(output_read);
      ASSERT_EQ(waitpid(pid, nullptr, 0), pid);
    }
  }
  auto last = PreparedLaunch::Start(in.dir, in.resident.get(), &err);  // its start lets go of the handed child's stack
  ASSERT_NE(last, nullptr) << err;
  last->Discard();
  in.resident.reset();
  RecordProperty("high_water_bytes", static_cast<int>(ChildStackHighWaterBytes()));
  EXPECT_GT(ChildStackHighWaterBytes(), 0u);
  EXPECT_LE(ChildStackHighWaterBytes(), kChildStackSlotBytes / 2);
  EXPECT_EQ(rmdir(in.dir.c_str()), 0) << strerror(errno);
}

}  // namespace
}  // namespace headroom
