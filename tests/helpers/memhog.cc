// memhog: a test helper that allocates and touches a requested amount of memory over a ramp, optionally
// split across child processes (as nvcc spreads work over cicc and ptxas), holds it, and says when.
//
//   memhog --mb 500 [--ramp-ms 300] [--hold-ms 200] [--procs 4] [--peak-fd N] [--peak-file PATH]
//
// "Peak" means every process has touched its whole share; the line "peak <bytes>\n" then goes to the
// fd and/or file, and the memory is held for --hold-ms after that moment. Exit 0 on success, 1 when a
// child died (e.g. OOM-killed; its signal is printed), 2 on bad usage.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
  long long mb = -1;
  long long ramp_ms = 0;
  long long hold_ms = 0;
  int procs = 1;
  int peak_fd = -1;
  std::string peak_file;
};

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "memhog: %s\nusage: memhog --mb N [--ramp-ms N] [--hold-ms N] [--procs N] [--peak-fd N] "
               "[--peak-file PATH]\n",
               why);
  std::exit(2);
}

Options ParseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc) Usage("missing value");
    const char* value = argv[++i];
    if (flag == "--mb") options.mb = std::atoll(value);
    else if (flag == "--ramp-ms") options.ramp_ms = std::atoll(value);
    else if (flag == "--hold-ms") options.hold_ms = std::atoll(value);
    else if (flag == "--procs") options.procs = std::atoi(value);
    else if (flag == "--peak-fd") options.peak_fd = std::atoi(value);
    else if (flag == "--peak-file") options.peak_file = value;
    else Usage("unknown option");
  }
  if (options.mb < 0) Usage("--mb is required");
  if (options.procs < 1) Usage("--procs must be at least 1");
  return options;
}

void SleepMs(long long ms) {
  if (ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// Maps `bytes` and writes to every page, spreading the work evenly over ramp_ms. The mapping is kept.
void AllocateAndTouch(size_t bytes, long long ramp_ms) {
  if (bytes == 0) return;
  void* mapping = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping == MAP_FAILED) {
    std::perror("memhog: mmap");
    std::exit(1);
  }
  auto* memory = static_cast<volatile unsigned char*>(mapping);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const long long steps = ramp_ms > 0 ? std::max(1LL, ramp_ms / 10) : 1;
  const size_t per_step = (bytes / static_cast<size_t>(steps) + page - 1) / page * page;
  auto start = std::chrono::steady_clock::now();
  size_t touched = 0;
  for (long long step = 0; step < steps && touched < bytes; ++step) {
    size_t end = step == steps - 1 ? bytes : std::min(bytes, touched + per_step);
    for (; touched < end; touched += page) memory[touched] = 1;
    std::this_thread::sleep_until(start + std::chrono::milliseconds(ramp_ms * (step + 1) / steps));
  }
  for (; touched < bytes; touched += page) memory[touched] = 1;
}

void WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

void ReportPeak(const Options& options, size_t bytes) {
  std::string line = "peak " + std::to_string(bytes) + "\n";
  if (options.peak_fd >= 0) WriteAll(options.peak_fd, line);
  if (!options.peak_file.empty()) {
    // Written aside and renamed, so a reader never sees half a line.
    std::string temp = options.peak_file + ".tmp";
    int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
      WriteAll(fd, line);
      close(fd);
      rename(temp.c_str(), options.peak_file.c_str());
    }
  }
}

int RunAlone(const Options& options, size_t bytes) {
  AllocateAndTouch(bytes, options.ramp_ms);
  ReportPeak(options, bytes);
  SleepMs(options.hold_ms);
  return 0;
}

// Each child touches its share, says so through `ready`, and holds it until the parent closes `release`.
[[noreturn]] void RunChild(size_t bytes, long long ramp_ms, int ready_write, int release_read) {
  AllocateAndTouch(bytes, ramp_ms);
  char byte = 'r';
  if (write(ready_write, &byte, 1) != 1) _exit(1);
  close(ready_write);  // so the parent sees EOF once every child has either reported or died
  while (read(release_read, &byte, 1) > 0) {
  }
  _exit(0);
}

int RunSplit(const Options& options, size_t bytes) {
  int ready[2], release[2];
  if (pipe(ready) != 0 || pipe(release) != 0) {
    std::perror("memhog: pipe");
    return 1;
  }
  const size_t share = bytes / static_cast<size_t>(options.procs);
  std::vector<pid_t> children;
  for (int i = 0; i < options.procs; ++i) {
    size_t child_bytes = i == options.procs - 1 ? bytes - share * static_cast<size_t>(options.procs - 1) : share;
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("memhog: fork");
      return 1;
    }
    if (pid == 0) {
      close(ready[0]);
      close(release[1]);
      if (options.peak_fd >= 0) close(options.peak_fd);
      RunChild(child_bytes, options.ramp_ms, ready[1], release[0]);
    }
    children.push_back(pid);
  }
  close(ready[1]);
  close(release[0]);
  int reported = 0;
  char byte;
  while (read(ready[0], &byte, 1) == 1) ++reported;
  if (reported == options.procs) {
    ReportPeak(options, bytes);
    SleepMs(options.hold_ms);
  }
  close(release[1]);
  int result = 0;
  for (size_t i = 0; i < children.size(); ++i) {
    int status = 0;
    while (waitpid(children[i], &status, 0) < 0) {
      if (errno != EINTR) return 1;
    }
    if (WIFSIGNALED(status)) {
      std::fprintf(stderr, "memhog: child %zu killed by signal %d\n", i, WTERMSIG(status));
      result = 1;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      result = 1;
    }
  }
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  Options options = ParseOptions(argc, argv);
  size_t bytes = static_cast<size_t>(options.mb) * 1024 * 1024;
  return options.procs == 1 ? RunAlone(options, bytes) : RunSplit(options, bytes);
}
