// JobserverServer: the private fifo directory, one channel per job, the MAKEFLAGS a job is given, and the
// removal of directories left behind by killed builds.
#include "headroom/exec/jobserver_server.h"

#include "headroom/exec/jobserver.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

namespace headroom {
namespace {

constexpr std::string_view kDirPrefix = "headroom-jobserver-";
constexpr char kToken = '+';

// A job's fifo. headroom's descriptor is non-blocking (offers and drains never wait); a kPipe job gets a
// second, blocking descriptor of the same fifo, so the job's reads wait as make's clients expect.
class FifoChannel : public TokenChannel {
 public:
  FifoChannel(std::string path, int fd, int child_fd) : path_(std::move(path)), fd_(fd), child_fd_(child_fd) {}
  ~FifoChannel() override {
    close(fd_);
    if (child_fd_ >= 0) close(child_fd_);
    unlink(path_.c_str());
  }
  bool Offer() override {
    for (;;) {
      ssize_t n = write(fd_, &kToken, 1);
      if (n == 1) return true;
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
  }
  size_t Drain() override {
    // Read what is there now, not what a client keeps writing: bounded by FIONREAD.
    int available = 0;
    if (ioctl(fd_, FIONREAD, &available) != 0 || available <= 0) return 0;
    size_t drained = 0;
    char buffer[64];
    while (drained < static_cast<size_t>(available)) {
      size_t want = std::min(sizeof buffer, static_cast<size_t>(available) - drained);
      ssize_t n = read(fd_, buffer, want);
      if (n > 0) {
        drained += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      break;  // EAGAIN: the job took it first
    }
    return drained;
  }

 private:
  std::string path_;
  int fd_;
  int child_fd_;
};

void RemoveDirectoryAndFifos(const std::string& directory) {
  if (DIR* dir = opendir(directory.c_str())) {
    while (dirent* entry = readdir(dir)) {
      std::string_view name = entry->d_name;
      if (name == "." || name == "..") continue;
      unlink((directory + "/" + entry->d_name).c_str());
    }
    closedir(dir);
  }
  rmdir(directory.c_str());
}

}  // namespace

std::string StripJobserverWords(std::string_view makeflags) {
  std::string kept;
  std::vector<std::string_view> words = MakeflagsWords(makeflags);
  size_t i = 0;
  for (; i < words.size() && words[i] != "--"; ++i) {
    std::string_view word = words[i];
    if (word.starts_with("-j") || word.starts_with("--jobserver-")) continue;
    // make writes its single letters first, dash-less; a long flag there is preceded by a blank.
    if (!kept.empty() || word[0] == '-') kept += ' ';
    kept += word;
  }
  // `-- VAR=value ...`: command-line variables, passed on untouched.
  for (; i < words.size(); ++i) {
    kept += ' ';
    kept += words[i];
  }
  return kept;
}

std::string JobMakeflags(const std::string& stripped, int parallelism, const std::string& auth) {
  std::string ours = " -j" + std::to_string(parallelism) + " --jobserver-auth=" + auth;
  size_t variables = stripped.find(" -- ");
  if (variables == std::string::npos && stripped.starts_with("-- ")) variables = 0;
  if (variables == std::string::npos) return stripped + ours;
  return stripped.substr(0, variables) + ours + stripped.substr(variables);
}

int RemoveStaleJobserverDirs(const std::string& temp_dir) {
  int removed = 0;
  DIR* dir = opendir(temp_dir.c_str());
  if (!dir) return 0;
  while (dirent* entry = readdir(dir)) {
    std::string_view name = entry->d_name;
    if (!name.starts_with(kDirPrefix)) continue;
    std::string rest(name.substr(kDirPrefix.size()));
    char* end = nullptr;
    long pid = strtol(rest.c_str(), &end, 10);
    if (pid <= 0 || *end != '-') continue;
    std::string path = temp_dir + "/" + entry->d_name;
    struct stat info;
    if (lstat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != geteuid()) continue;
    if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // its build still runs
    // The pid may belong to another pid namespace sharing this directory: only the lock and the age tell.
    if (time(nullptr) - info.st_mtime < kStaleJobserverDirAgeS) continue;
    const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {  // held until close: no server can take it while it goes
      RemoveDirectoryAndFifos(path);
      ++removed;
    }
    close(fd);
  }
  closedir(dir);
  return removed;
}

std::unique_ptr<JobserverServer> JobserverServer::Create(JobserverStyle style, int parallelism,
                                                         const std::string& temp_dir, const char* inherited_makeflags,
                                                         std::string* error) {
  RemoveStaleJobserverDirs(temp_dir);
  std::string pattern = temp_dir + "/" + std::string(kDirPrefix) + std::to_string(getpid()) + "-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (!mkdtemp(buffer.data())) {  // mode 0700: the fifos are the build's alone
    *error = "creating a jobserver directory in " + temp_dir + ": " + strerror(errno);
    return nullptr;
  }
  // Held for the server's life and never inherited by jobs (O_CLOEXEC): a sweeper in any pid namespace sees it.
  int lock = open(buffer.data(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) != 0) {
    close(lock);
    lock = -1;  // cannot happen for a fresh directory; the age rule still protects it
  }
  std::string stripped = StripJobserverWords(inherited_makeflags ? inherited_makeflags : "");
  return std::unique_ptr<JobserverServer>(
      new JobserverServer(style, parallelism, buffer.data(), lock, std::move(stripped)));
}

JobserverServer::JobserverServer(JobserverStyle style, int parallelism, std::string directory, int directory_lock,
                                 std::string base_makeflags)
    : style_(style),
      parallelism_(parallelism),
      directory_(std::move(directory)),
      directory_lock_(directory_lock),
      base_makeflags_(std::move(base_makeflags)) {}

JobserverServer::~JobserverServer() {
  ledger_.Clear();  // closes and unlinks every channel's fifo
  RemoveDirectoryAndFifos(directory_);
  if (directory_lock_ >= 0) close(directory_lock_);
}

void JobserverServer::AlsoRewrite(const std::string& name, const char* inherited) {
  if (inherited) also_rewritten_.emplace_back(name, StripJobserverWords(inherited));
}

std::unique_ptr<TokenChannel> JobserverServer::OpenChannel(JobStartOptions* options, std::string* error) {
  std::string path = directory_ + "/job-" + std::to_string(next_channel_++);
  if (mkfifo(path.c_str(), 0600) != 0) {
    *error = "mkfifo " + path + ": " + strerror(errno);
    return nullptr;
  }
  // O_RDWR: neither open waits for the other end, and the fifo never reads as ended while headroom holds it.
  int fd = open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  int child_fd = style_ == JobserverStyle::kPipe ? open(path.c_str(), O_RDWR | O_CLOEXEC) : -1;
  if (fd < 0 || (style_ == JobserverStyle::kPipe && child_fd < 0)) {
    *error = "opening " + path + ": " + strerror(errno);
    if (fd >= 0) close(fd);
    unlink(path.c_str());
    return nullptr;
  }
  std::string auth;
  if (style_ == JobserverStyle::kPipe) {
    auth = std::to_string(child_fd) + "," + std::to_string(child_fd);
    options->inherit_fd = child_fd;
  } else {
    auth = "fifo:" + path;
  }
  options->environment.push_back("MAKEFLAGS=" + JobMakeflags(base_makeflags_, parallelism_, auth));
  for (const auto& [name, stripped] : also_rewritten_) {
    options->environment.push_back(name + "=" + JobMakeflags(stripped, parallelism_, auth));
  }
  return std::make_unique<FifoChannel>(std::move(path), fd, child_fd);
}

}  // namespace headroom
