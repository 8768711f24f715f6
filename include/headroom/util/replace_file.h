// Replacing a file whole and safely in a directory others may write to: an exclusive, never-followed temp
// file with a name nobody can guess, a rename, and the clean-up of temp files a crashed writer left behind.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

namespace headroom {

// Creates "<path>.tmp.<pid>.<random>" with O_EXCL, O_NOFOLLOW and `mode` (before the umask), for writing;
// returns its descriptor and sets *temp to its name, or -1 with errno set.
int CreateTempBeside(const std::string& path, mode_t mode, std::string* temp);

// Writes `text` to `path` through "<path>.tmp.<pid>.<random>" in the same directory, created with O_EXCL and
// O_NOFOLLOW (a symlink planted under any name is never written through) and `mode` (before the umask), then
// renames it over `path`. On failure *error names the path and the temp file is gone.
bool ReplaceFileContents(const std::string& path, std::string_view text, mode_t mode, std::string* error);

// Removes the temp files ReplaceFileContents left beside `path` when a writer died mid-write: those whose
// writer pid is not running here and that are older than `min_age_s` (a pid from another pid namespace may
// look dead while its writer still runs; a real write takes well under a second). 0 with `all_dead`: the
// caller holds the lock every writer takes, so any temp file present is stale whatever its pid says.
void RemoveStaleTempFiles(const std::string& path, int64_t min_age_s, bool all_dead = false);

// Holds an exclusive flock on an open file descriptor. Polls rather than blocks, so a holder stopped with
// SIGSTOP or under a debugger costs the waiter `wait_ms`, not its end.
class PolledFileLock {
 public:
  // Locks `fd` (owned by the caller, open for as long as this lives). *error says why when not locked().
  PolledFileLock(int fd, int wait_ms, std::string* error);
  ~PolledFileLock();
  PolledFileLock(const PolledFileLock&) = delete;
  PolledFileLock& operator=(const PolledFileLock&) = delete;
  bool locked() const { return locked_; }

 private:
  int fd_;
  bool locked_ = false;
};

}  // namespace headroom
