// Whole-file replacement through exclusive temp files, stale temp clean-up, and a polled flock
// (include/headroom/util/replace_file.h).
#include "headroom/util/replace_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <thread>

#include <fmt/format.h>

namespace headroom {
namespace {

constexpr std::string_view kTempInfix = ".tmp.";

uint64_t RandomSuffix() {
  uint64_t value = 0;
  // /dev/urandom rather than getrandom(2): the portable wheel targets glibc 2.17, which has no getrandom().
  const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    const bool read_all = read(fd, &value, sizeof value) == static_cast<ssize_t>(sizeof value);
    close(fd);
    if (read_all) return value;
  }
  // No entropy yet (early boot): unpredictability matters less than uniqueness, which O_EXCL guarantees.
  return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
         (static_cast<uint64_t>(getpid()) << 32);
}

bool WriteAll(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t wrote = write(fd, text.data(), text.size());
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) return false;
    text.remove_prefix(static_cast<size_t>(wrote));
  }
  return true;
}

// The writer pid in a temp file's name after "<base>.tmp.": "<pid>" (older headroom) or "<pid>.<random>".
bool TempWriterPid(std::string_view name, std::string_view base, pid_t* pid) {
  if (name.size() <= base.size() + kTempInfix.size() || name.substr(0, base.size()) != base ||
      name.substr(base.size(), kTempInfix.size()) != kTempInfix) {
    return false;
  }
  std::string_view rest = name.substr(base.size() + kTempInfix.size());
  long value = 0;
  size_t digits = 0;
  for (; digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9' && digits < 9; ++digits) {
    value = value * 10 + (rest[digits] - '0');
  }
  if (digits == 0 || (digits < rest.size() && rest[digits] != '.')) return false;
  *pid = static_cast<pid_t>(value);
  return true;
}

bool ProcessRunsHere(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

}  // namespace

int CreateTempBeside(const std::string& path, mode_t mode, std::string* temp) {
  int fd = -1;
  for (int attempt = 0; attempt < 8 && fd < 0; ++attempt) {  // a clash with a planted name: draw again
    *temp = fmt::format("{}{}{}.{:016x}", path, kTempInfix, getpid(), RandomSuffix());
    fd = open(temp->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0 && errno != EEXIST) break;
  }
  return fd;
}

bool ReplaceFileContents(const std::string& path, std::string_view text, mode_t mode, std::string* error) {
  std::string temp;
  const int fd = CreateTempBeside(path, mode, &temp);
  if (fd < 0) {
    *error = fmt::format("cannot write {}: {}", path, std::strerror(errno));
    return false;
  }
  bool ok = WriteAll(fd, text);
  int saved = errno;
  ok = close(fd) == 0 && ok;
  if (ok && std::rename(temp.c_str(), path.c_str()) != 0) ok = false;
  if (!ok) {
    saved = errno ? errno : saved;
    unlink(temp.c_str());
    *error = fmt::format("cannot write {}: {}", path, std::strerror(saved));
    return false;
  }
  return true;
}

void RemoveStaleTempFiles(const std::string& path, int64_t min_age_s, bool all_dead) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  DIR* listing = opendir(dir.c_str());
  if (!listing) return;
  const int dir_fd = dirfd(listing);
  const time_t now = time(nullptr);
  while (const dirent* entry = readdir(listing)) {
    pid_t pid = 0;
    if (!TempWriterPid(entry->d_name, base, &pid)) continue;
    if (!all_dead && ProcessRunsHere(pid)) continue;
    struct stat st;
    if (fstatat(dir_fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (st.st_uid != geteuid() || now - st.st_mtime < min_age_s) continue;  // never another user's file
    unlinkat(dir_fd, entry->d_name, 0);
  }
  closedir(listing);
}

PolledFileLock::PolledFileLock(int fd, int wait_ms, std::string* error) : fd_(fd) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  while (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      *error = fmt::format("cannot lock: {}", std::strerror(errno));
      return;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      *error = fmt::format("stayed locked for {} ms by another headroom", wait_ms);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // a poll interval, not synchronisation
  }
  locked_ = true;
}

PolledFileLock::~PolledFileLock() {
  if (locked_) flock(fd_, LOCK_UN);
}

}  // namespace headroom
