// Shared helpers for the memory module's tests: fake /proc and /sys trees in a temp dir, running
// memhog (optionally inside a cgroup, in its own process group) and reaping it like the runner does.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "headroom/exec/process_runner.h"
#include "headroom/util/byte_size.h"
#include "headroom/memory/job_meter.h"
#include "headroom/memory/kernel_file.h"
#include "headroom/memory/memory_probe.h"
#include "headroom/util/clock.h"

namespace headroom::memory_test {

// Tests that need root and real cgroups fail loudly on CI and skip elsewhere.
#define HEADROOM_REQUIRE_OR_SKIP(condition, why)                   \
  do {                                                             \
    if (!(condition)) {                                            \
      if (std::getenv("CI") != nullptr) FAIL() << (why);           \
      GTEST_SKIP() << (why);                                       \
    }                                                              \
  } while (0)

// A temp directory standing in for "/" (proc/..., sys/fs/cgroup/...).
class FakeRoot {
 public:
  FakeRoot() {
    std::string pattern = (std::filesystem::temp_directory_path() / "headroom-memtest-XXXXXX").string();
    root_ = mkdtemp(pattern.data());
  }
  ~FakeRoot() { std::filesystem::remove_all(root_); }
  const std::string& root() const { return root_; }
  std::string Path(const std::string& relative) const { return root_ + "/" + relative; }
  // Writes in place (same inode), as the kernel changes a file under an open descriptor.
  void Write(const std::string& relative, const std::string& contents) const {
    std::filesystem::create_directories(std::filesystem::path(Path(relative)).parent_path());
    std::ofstream(Path(relative), std::ios::trunc) << contents;
  }
  void MakeDir(const std::string& relative) const { std::filesystem::create_directories(Path(relative)); }
  void Remove(const std::string& relative) const { std::filesystem::remove_all(Path(relative)); }
  // A machine with `total_bytes`, all of it available, no cgroup limit, no memory pressure, no OOM kill yet.
  void WriteQuietMachine(uint64_t total_bytes) const {
    const uint64_t kb = total_bytes / 1024;
    Write("proc/meminfo", "MemTotal: " + std::to_string(kb) + " kB\nMemFree: " + std::to_string(kb) +
                              " kB\nMemAvailable: " + std::to_string(kb) + " kB\n");
    Write("proc/pressure/memory",
          "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
    Write("proc/self/cgroup", "0::/\n");
    Write("proc/self/mountinfo", "");
    Write("proc/vmstat", "oom_kill 0\n");
    MakeDir("proc/1");
  }

 private:
  std::string root_;
};

// A probe reading the fake tree at `root`, timed by `clock`.
inline MemoryProbeOptions FakeProbeOptions(const FakeRoot& root, const Clock* clock) {
  MemoryProbeOptions options;
  options.root = root.Path("");
  options.clock = clock;
  return options;
}

// A meter over the fake tree's /proc; `use_cgroups` false measures without per-job cgroups.
inline JobMeterOptions FakeMeterOptions(const FakeRoot& root, bool use_cgroups) {
  JobMeterOptions options;
  options.root = root.Path("");
  options.use_cgroups = use_cgroups;
  return options;
}

// A memhog started the way the process runner starts jobs: own process group, optionally joining a
// cgroup before exec. Its "peak" line arrives through a pipe.
struct MemhogProcess {
  pid_t pid = -1;
  int peak_fd = -1;
};

inline MemhogProcess StartMemhog(const std::vector<std::string>& args, const std::string& cgroup_dir = "") {
  int peak_pipe[2];
  if (pipe2(peak_pipe, O_CLOEXEC) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    if (!cgroup_dir.empty()) {
      int fd = open((cgroup_dir + "/cgroup.procs").c_str(), O_WRONLY);
      if (fd < 0 || write(fd, "0", 1) != 1) _exit(126);
      close(fd);
    }
    dup2(peak_pipe[1], 3);  // dup2 clears close-on-exec on fd 3
    std::vector<std::string> full = {HEADROOM_MEMHOG_PATH, "--peak-fd", "3"};
    full.insert(full.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& arg : full) argv.push_back(arg.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  setpgid(pid, pid);  // also here, so the group exists before the parent goes on (no race with the child)
  close(peak_pipe[1]);
  return {pid, peak_pipe[0]};
}

// Blocks until memhog reports its peak; false when it ended without reaching it (e.g. OOM-killed).
inline bool WaitForPeak(MemhogProcess& process) {
  char buffer[64];
  ssize_t n;
  do {
    n = read(process.peak_fd, buffer, sizeof buffer);
  } while (n < 0 && errno == EINTR);
  return n > 0;
}

// Reaps memhog with wait4, filling a JobExit as the runner would.
inline JobExit ReapMemhog(MemhogProcess& process, JobId id) {
  JobExit exit;
  exit.id = id;
  exit.pid = process.pid;
  int status = 0;
  rusage usage{};
  while (wait4(process.pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  exit.exited_normally = WIFEXITED(status);
  exit.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
  exit.term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  exit.max_rss_kb = usage.ru_maxrss;
  if (process.peak_fd >= 0) close(process.peak_fd);
  process.peak_fd = -1;
  return exit;
}

// A kernel (or fake) file's whole text; "" when it cannot be read.
inline std::string ReadText(const std::string& path) {
  std::string text, err;
  ReadWholeFile(path, &text, &err);
  return text;
}

}  // namespace headroom::memory_test
