// Owns the raw system calls of children that run on headroom's memory (CLONE_VM) and with its thread pointer, so
// cannot use libc (errno and every other thread-local would be headroom's): results are -errno.
#pragma once

#include <fcntl.h>
#include <sys/syscall.h>

#include <cerrno>

#include "job_command.h"

namespace headroom::exec_internal {

#if defined(__x86_64__)
inline constexpr bool kCanRunOnSharedMemory = kShareMemoryWithChild;

inline long RawSyscall(long number, long a1 = 0, long a2 = 0, long a3 = 0, long a4 = 0) {
  long result;
  register long r10 asm("r10") = a4;
  asm volatile("syscall" : "=a"(result) : "a"(number), "D"(a1), "S"(a2), "d"(a3), "r"(r10) : "rcx", "r11", "memory");
  return result;
}
#else
inline constexpr bool kCanRunOnSharedMemory = false;
inline long RawSyscall(long, long = 0, long = 0, long = 0, long = 0) { return -ENOSYS; }
#endif

template <typename T>
long RawArg(T value) {
  return (long)value;  // pointers and descriptors alike, as the kernel takes them
}

[[noreturn]] inline void RawExit(int code) {
  for (;;) RawSyscall(SYS_exit, code);
}

// Moves the calling process into the cgroup whose cgroup.procs is `procs_path`; >= 0 on success.
inline long RawJoinCgroup(const char* procs_path) {
  long fd = RawSyscall(SYS_open, RawArg(procs_path), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return fd;
  long written = RawSyscall(SYS_write, fd, RawArg("0"), 1);  // "0": the writing process
  RawSyscall(SYS_close, fd);
  return written;
}

}  // namespace headroom::exec_internal
