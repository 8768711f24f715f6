// KernelFile: pread-based re-reading of procfs/cgroupfs files, plus one-shot read/write helpers.
#include "headroom/memory/kernel_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <fmt/format.h>

namespace headroom {

namespace {

std::string ErrnoMessage(const std::string& what, const std::string& path) {
  return fmt::format("{} {}: {}", what, path, strerror(errno));
}

// Kernel files report size 0, so read in chunks until EOF.
bool ReadFromOffsetZero(int fd, std::string* contents) {
  contents->clear();
  char buffer[4096];
  off_t offset = 0;
  for (;;) {
    ssize_t n = pread(fd, buffer, sizeof buffer, offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) return true;
    contents->append(buffer, static_cast<size_t>(n));
    offset += n;
    // procfs, sysfs and cgroupfs fill a read as far as they can, as regular files do, so a short read is
    // the end: one system call per reading instead of two for every small file read each tick.
    if (static_cast<size_t>(n) < sizeof buffer) return true;
  }
}

}  // namespace

KernelFile::~KernelFile() { Close(); }

KernelFile::KernelFile(KernelFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_), writable_(other.writable_) {
  other.fd_ = -1;
}

KernelFile& KernelFile::operator=(KernelFile&& other) noexcept {
  if (this != &other) {
    Close();
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    writable_ = other.writable_;
    other.fd_ = -1;
  }
  return *this;
}

bool KernelFile::Open(std::string* err) {
  if (fd_ >= 0) return true;
  fd_ = open(path_.c_str(), (writable_ ? O_RDWR : O_RDONLY) | O_CLOEXEC);
  if (fd_ < 0) {
    *err = ErrnoMessage("cannot open", path_);
    return false;
  }
  return true;
}

void KernelFile::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

bool KernelFile::Read(std::string* contents, std::string* err) {
  if (path_.empty()) {
    *err = "no file";
    return false;
  }
  if (!Open(err)) return false;
  if (ReadFromOffsetZero(fd_, contents)) return true;
  // A removed-and-recreated cgroup leaves the old descriptor dead (ENODEV): retry once with a fresh one.
  Close();
  if (!Open(err)) return false;
  if (ReadFromOffsetZero(fd_, contents)) return true;
  *err = ErrnoMessage("cannot read", path_);
  return false;
}

bool KernelFile::Write(const std::string& contents, std::string* err) {
  if (path_.empty()) {
    *err = "no file";
    return false;
  }
  if (!writable_) {
    Close();
    writable_ = true;
  }
  if (!Open(err)) {
    writable_ = false;  // reads go on through a read-only descriptor
    return false;
  }
  // Plain files (test trees) need the truncation; cgroupfs, sysfs and procfs ignore it (a system call saved on every
  // job's re-arm).
  if (!path_.starts_with("/sys/") && !path_.starts_with("/proc/")) [[maybe_unused]] int ignored = ftruncate(fd_, 0);
  ssize_t n;
  do {
    n = pwrite(fd_, contents.data(), contents.size(), 0);
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(contents.size())) return true;
  *err = ErrnoMessage("cannot write", path_);
  Close();
  writable_ = false;
  return false;
}

bool ReadWholeFile(const std::string& path, std::string* contents, std::string* err) {
  KernelFile file(path);
  return file.Read(contents, err);
}

bool WriteWholeFile(const std::string& path, const std::string& contents, std::string* err) {
  // O_TRUNC is what a shell's ">" does; cgroupfs ignores it, plain files (test trees) need it.
  int fd = open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) {
    *err = ErrnoMessage("cannot open", path);
    return false;
  }
  ssize_t n;
  do {
    n = write(fd, contents.data(), contents.size());
  } while (n < 0 && errno == EINTR);
  bool ok = n == static_cast<ssize_t>(contents.size());
  if (!ok) *err = ErrnoMessage("cannot write", path);
  close(fd);
  return ok;
}

}  // namespace headroom
