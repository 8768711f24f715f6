// Implements InterruptSignals: async-signal-safe recording of SIGINT/SIGTERM/SIGHUP for the
// process runner, with a non-blocking self-pipe as the wake-up channel.
#include "interrupt_signals.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace headroom::exec_internal {
namespace {

constexpr int kInterruptSignals[3] = {SIGINT, SIGTERM, SIGHUP};

// Lock-free atomics are safe to touch from a signal handler.
std::atomic<int> g_last_signal{0};
std::atomic<unsigned> g_signal_count{0};
std::atomic<int> g_wake_write_fd{-1};

void RecordInterrupt(int sig) {
  int saved_errno = errno;
  g_last_signal.store(sig);
  g_signal_count.fetch_add(1);
  int fd = g_wake_write_fd.load();
  if (fd >= 0) {
    char byte = 1;
    // A full pipe already means "wake up"; the result is deliberately ignored.
    [[maybe_unused]] ssize_t ignored = ::write(fd, &byte, 1);
  }
  errno = saved_errno;
}

sigset_t InterruptSet() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kInterruptSignals) sigaddset(&set, sig);
  return set;
}

}  // namespace

InterruptSignals::InterruptSignals() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
    wake_read_fd_ = fds[0];
    wake_write_fd_ = fds[1];
  }
  g_last_signal.store(0);
  g_signal_count.store(0);
  previous_wake_write_fd_ = g_wake_write_fd.exchange(wake_write_fd_);

  // Block first so nothing arrives between installing the handler and the first ppoll.
  sigset_t interrupts = InterruptSet();
  pthread_sigmask(SIG_BLOCK, &interrupts, &previous_mask_);

  struct sigaction action = {};
  action.sa_handler = RecordInterrupt;
  action.sa_mask = interrupts;  // no nesting of our own handler
  for (int i = 0; i < 3; ++i) sigaction(kInterruptSignals[i], &action, &previous_actions_[i]);
}

InterruptSignals::~InterruptSignals() {
  for (int i = 0; i < 3; ++i) sigaction(kInterruptSignals[i], &previous_actions_[i], nullptr);
  // A signal still pending here is delivered under the restored handler, as if we never existed.
  pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
  g_wake_write_fd.store(previous_wake_write_fd_);
  if (wake_read_fd_ >= 0) ::close(wake_read_fd_);
  if (wake_write_fd_ >= 0) ::close(wake_write_fd_);
}

void InterruptSignals::DrainWakeFd() const {
  char buffer[64];
  while (wake_read_fd_ >= 0 && ::read(wake_read_fd_, buffer, sizeof buffer) > 0) {
  }
}

int InterruptSignals::last_signal() const { return g_last_signal.load(); }

unsigned InterruptSignals::count() const { return g_signal_count.load(); }

sigset_t InterruptSignals::MaskWhileWaiting() const {
  sigset_t mask;
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  for (int sig : kInterruptSignals) sigdelset(&mask, sig);
  return mask;
}

}  // namespace headroom::exec_internal
