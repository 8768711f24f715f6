// GNU make jobserver client: MAKEFLAGS parsing, FIFO token acquire/release, and the start-up
// messages ninja 1.13 prints for it.
#include "headroom/exec/jobserver.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "headroom/build/build_config.h"
#include "headroom/status/status.h"

namespace headroom {
namespace {

// Scans one int as %d does: optional leading blanks and sign, then digits (at least one).
bool ScanInt(std::string_view text, size_t* pos, int* value) {
  size_t at = *pos;
  while (at < text.size() && isspace(static_cast<unsigned char>(text[at]))) ++at;
  bool negative = false;
  if (at < text.size() && (text[at] == '-' || text[at] == '+')) negative = text[at++] == '-';
  size_t digits_start = at;
  int64_t magnitude = 0;
  while (at < text.size() && isdigit(static_cast<unsigned char>(text[at]))) {
    magnitude = std::min<int64_t>(magnitude * 10 + (text[at] - '0'), int64_t{INT32_MAX} + 1);
    ++at;
  }
  if (at == digits_start) return false;
  *value = static_cast<int>(negative ? -magnitude : std::min<int64_t>(magnitude, INT32_MAX));
  *pos = at;
  return true;
}

// "R,W" as sscanf("%d,%d") reads it: true when both numbers were found.
bool ScanDescriptorPair(std::string_view text, int* read_fd, int* write_fd) {
  size_t pos = 0;
  if (!ScanInt(text, &pos, read_fd)) return false;
  if (pos >= text.size() || text[pos] != ',') return false;
  ++pos;
  return ScanInt(text, &pos, write_fd);
}

}  // namespace

std::vector<std::string_view> MakeflagsWords(std::string_view text) {
  std::vector<std::string_view> words;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t start = text.find_first_not_of(" \t", pos);
    if (start == std::string_view::npos) break;
    size_t end = text.find_first_of(" \t", start);
    if (end == std::string_view::npos) end = text.size();
    words.push_back(text.substr(start, end - start));
    pos = end;
  }
  return words;
}

bool ParseMakeFlags(std::string_view makeflags, JobserverConfig* config, std::string* error) {
  *config = JobserverConfig();
  std::vector<std::string_view> words = MakeflagsWords(makeflags);
  // make writes its single-letter flags, dash-less, as the first word; `n` there is `make -n`,
  // whose recipes must not run, so no tokens are needed either.
  if (!words.empty() && words[0][0] != '-' && words[0].find('n') != std::string_view::npos) return true;

  std::string_view auth;
  bool found = false;
  for (std::string_view word : words) {
    if (word == "--") break;  // variable assignments follow; they are not flags
    // make 4.2+ says --jobserver-auth=; older makes said --jobserver-fds= (always a pipe).
    for (std::string_view prefix : {std::string_view("--jobserver-auth="), std::string_view("--jobserver-fds=")}) {
      if (word.substr(0, prefix.size()) == prefix) {
        auth = word.substr(prefix.size());
        found = true;  // a sub-make may append its own; the last one is current
      }
    }
  }
  if (!found) return true;

  constexpr std::string_view kFifoPrefix = "fifo:";
  if (auth.substr(0, kFifoPrefix.size()) == kFifoPrefix) {
    config->mode = JobserverConfig::Mode::kFifo;
    config->fifo_path = std::string(auth.substr(kFifoPrefix.size()));
    return true;
  }
  // Read like make's own sscanf("%d,%d"): two leading integers, anything after the second ignored;
  // anything else is a semaphore name (the Windows form).
  int read_fd = -1, write_fd = -1;
  if (!ScanDescriptorPair(auth, &read_fd, &write_fd)) {
    *error = "Semaphore mode is not supported on Posix!";
    return false;
  }
  // make passes negative descriptors to a child it does not consider a sub-make.
  if (read_fd < 0 || write_fd < 0) return true;
  config->mode = JobserverConfig::Mode::kPipe;
  config->read_fd = read_fd;
  config->write_fd = write_fd;
  return true;
}

std::unique_ptr<JobserverClient> JobserverClient::OpenFifo(const std::string& path, std::string* error) {
  if (path.empty()) {
    *error = "Empty fifo path";
    return nullptr;
  }
  // O_RDWR: the open never blocks waiting for a writer and reads never see end-of-file.
  // O_NONBLOCK: an empty pool answers "no token" instead of stalling the build loop. The file
  // description is our own, so the flag does not affect make or other clients.
  int fd = open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    *error = std::string("Error opening fifo for reading: ") + strerror(errno);
    return nullptr;
  }
  struct stat info;
  if (fstat(fd, &info) != 0 || !S_ISFIFO(info.st_mode)) {
    close(fd);
    *error = "Not a fifo path: " + path;
    return nullptr;
  }
  return std::unique_ptr<JobserverClient>(new JobserverClient(fd));
}

std::unique_ptr<JobserverClient> JobserverClient::OpenPipe(int read_fd, int write_fd, std::string* error) {
  // make closes the pair for recipes it does not take for sub-makes; a descriptor that is open but not a
  // pipe is someone else's and must not be read. Nor is one of headroom's own pipes (its job output
  // and signal pipes may take the numbers make withheld): those are all close-on-exec, inherited ones
  // are not.
  auto inherited_pipe = [](int fd) {
    struct stat info;
    int flags = fcntl(fd, F_GETFD);
    return flags >= 0 && !(flags & FD_CLOEXEC) && fstat(fd, &info) == 0 && S_ISFIFO(info.st_mode);
  };
  if (!inherited_pipe(read_fd) || !inherited_pipe(write_fd)) {
    *error = "Invalid file descriptors";
    return nullptr;
  }
  // A fresh open file description of the same pipe: reads may then be non-blocking without setting
  // O_NONBLOCK on the description make and its other children share, and it reads and writes alike.
  const std::string proc_path = "/proc/self/fd/" + std::to_string(read_fd);
  int fd = open(proc_path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    *error = "Invalid file descriptors";
    return nullptr;
  }
  return std::unique_ptr<JobserverClient>(new JobserverClient(fd));
}

JobserverClient::~JobserverClient() {
  ReleaseTo(0);
  close(fd_);
}

bool JobserverClient::TryAcquire() {
  char token;
  for (;;) {
    ssize_t n = read(fd_, &token, 1);
    if (n == 1) {
      tokens_.push_back(token);
      return true;
    }
    if (n < 0 && errno == EINTR) continue;
    return false;  // EAGAIN: the pool is empty for now
  }
}

bool JobserverClient::WriteToken(char token) {
  for (;;) {
    ssize_t n = write(fd_, &token, 1);
    if (n == 1) return true;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      // Only with a pool bigger than the pipe buffer; wait for room rather than lose a token.
      pollfd pfd{fd_, POLLOUT, 0};
      poll(&pfd, 1, -1);
      continue;
    }
    return false;
  }
}

void JobserverClient::ReleaseTo(size_t jobs) {
  while (!tokens_.empty() && slots() > std::max<size_t>(jobs, 1)) {
    WriteToken(tokens_.back());
    tokens_.pop_back();
  }
}

std::unique_ptr<JobserverClient> SetUpJobserver(const BuildConfig& config, const char* makeflags, Status* status) {
  // An explicit -j is the user's own cap, and a dry run starts nothing.
  if (config.parallelism_from_cli || config.dry_run || !makeflags || !*makeflags) return nullptr;
  JobserverConfig jobserver;
  std::string error;
  const bool quiet = config.verbosity == BuildConfig::Verbosity::kQuiet;
  if (!ParseMakeFlags(makeflags, &jobserver, &error)) {
    if (!quiet) status->Warning("Ignoring jobserver: " + error + " [" + makeflags + "]");
    return nullptr;
  }
  if (jobserver.mode == JobserverConfig::Mode::kNone) return nullptr;
  if (config.verbosity != BuildConfig::Verbosity::kNoStatusUpdate && !quiet)
    status->Info(std::string("Jobserver mode detected: ") + makeflags);
  std::unique_ptr<JobserverClient> client;
  if (jobserver.mode == JobserverConfig::Mode::kPipe) {
    // GNU make before 4.4 only offers a pipe; PyPI's ninja 1.13.2 uses it, with this advice.
    if (config.verbosity != BuildConfig::Verbosity::kNoStatusUpdate && !quiet)
      status->Warning("Jobserver 'pipe' mode detected, a pool that implements 'fifo' mode would be more reliable!");
    client = JobserverClient::OpenPipe(jobserver.read_fd, jobserver.write_fd, &error);
  } else {
    client = JobserverClient::OpenFifo(jobserver.fifo_path, &error);
  }
  if (!client && !quiet) status->Error("Could not initialize jobserver: " + error);
  return client;
}

}  // namespace headroom
