// Owns file descriptors for the exec module: a move-only RAII holder and a helper that keeps
// our descriptors clear of 0/1/2 so a child's dup2 onto its stdio never collides with them.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <utility>

namespace headroom::exec_internal {

class ScopedFd {
 public:
  ScopedFd() = default;
  explicit ScopedFd(int fd) : fd_(fd) {}
  ScopedFd(ScopedFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  ScopedFd& operator=(ScopedFd&& other) noexcept {
    if (this != &other) reset(std::exchange(other.fd_, -1));
    return *this;
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  ~ScopedFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// If headroom was started with a closed stdin/stdout/stderr, pipe2 may hand out 0..2; move such a
// descriptor to >= 3 (close-on-exec) so the child's stdio redirection cannot clobber it.
inline int MoveAboveStdio(int fd) {
  if (fd < 0 || fd > 2) return fd;
  int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  ::close(fd);
  return moved;
}

}  // namespace headroom::exec_internal
