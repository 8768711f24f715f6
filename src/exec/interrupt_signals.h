// Owns the runner's interrupt handling: handlers for SIGINT/SIGTERM/SIGHUP, keeping those signals
// blocked except inside ppoll (so none is lost), and a self-pipe that wakes ppoll on any thread.
#pragma once

#include <signal.h>

namespace headroom::exec_internal {

// RAII: the constructor installs the handlers and blocks the signals in the calling thread; the
// destructor restores the previous handlers and signal mask. One live instance at a time is the
// expected use; nested instances restore each other's state in LIFO order.
class InterruptSignals {
 public:
  InterruptSignals();
  ~InterruptSignals();
  InterruptSignals(const InterruptSignals&) = delete;
  InterruptSignals& operator=(const InterruptSignals&) = delete;

  // Readable after an interrupt arrived; -1 if the self-pipe could not be created.
  int wake_fd() const { return wake_read_fd_; }
  void DrainWakeFd() const;
  // The most recent interrupting signal, 0 if none arrived since construction.
  int last_signal() const;
  // How many interrupts arrived since construction (lets AbortAll notice a second Ctrl-C).
  unsigned count() const;
  // The calling thread's current mask with the interrupt signals removed: the mask for ppoll.
  sigset_t MaskWhileWaiting() const;

 private:
  struct sigaction previous_actions_[3];
  sigset_t previous_mask_;
  int wake_read_fd_ = -1;
  int wake_write_fd_ = -1;
  int previous_wake_write_fd_ = -1;
};

}  // namespace headroom::exec_internal
