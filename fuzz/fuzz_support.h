// Shared pieces of the libFuzzer targets: fatal errors as exceptions, a disk that holds no files, a scratch file
// that file-based loaders (logs, history) read the fuzz input from, and a scratch /proc/self for cgroup discovery.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "headroom/util/disk.h"
#include "headroom/util/messages.h"

namespace headroom_fuzz {

// Thrown instead of exiting on Fatal() (see CatchFatalErrors).
struct FatalExit {};

// Turns the fatal errors that ninja also makes fatal (a cycle in rule variables, a newer
// ninja_required_version) into a FatalExit the target catches: they are expected results for some inputs,
// and an exit would stop the whole run without saving anything. Quiet, because it happens often.
inline void CatchFatalErrors() {
  headroom::SetFatalHandler([](std::string_view) { throw FatalExit{}; });
}

// Every read misses and every write fails, so include/subninja/dyndep loads report "not found"
// instead of touching the real file system.
class EmptyDisk : public headroom::DiskInterface {
 public:
  headroom::TimeStamp Stat(const std::string&, std::string*) const override { return 0; }
  bool WriteFile(const std::string&, const std::string&) override { return false; }
  bool MakeDir(const std::string&) override { return false; }
  ReadStatus ReadFile(const std::string&, std::string*, std::string* err) override {
    *err = "No such file or directory";
    return ReadStatus::kNotFound;
  }
  int RemoveFile(const std::string&) override { return 1; }
};

inline std::string ScratchPath(const char* name) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp && *tmp ? tmp : "/tmp") + "/headroom-fuzz-" + std::to_string(getpid()) + "-" + name;
}

// Replaces the file at `path` with exactly `size` bytes of `data`; a fuzz run cannot go on without it.
inline void WriteOrAbort(const std::string& path, const uint8_t* data, size_t size) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) std::abort();
  size_t done = 0;
  while (done < size) {
    ssize_t n = write(fd, data + done, size - done);
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  close(fd);
}

// A per-process file under $TMPDIR (or /tmp), rewritten with each input; loaders may truncate or
// delete it (recovery paths), which is why it is recreated every time.
class ScratchFile {
 public:
  explicit ScratchFile(const char* name) : path_(ScratchPath(name)) {}
  ~ScratchFile() { unlink(path_.c_str()); }
  // Returns the path holding exactly `size` bytes of `data`.
  const std::string& Write(const uint8_t* data, size_t size) {
    WriteOrAbort(path_, data, size);
    return path_;
  }

 private:
  std::string path_;
};

// A per-process stand-in for a file system root holding only <root>/proc/self/, for code that reads
// /proc/self files under a configurable root (cgroup discovery).
class ScratchProcRoot {
 public:
  explicit ScratchProcRoot(const char* name) : root_(ScratchPath(name)) {
    mkdir(root_.c_str(), 0700);
    mkdir((root_ + "/proc").c_str(), 0700);
    mkdir((root_ + "/proc/self").c_str(), 0700);
  }
  ~ScratchProcRoot() {
    for (const char* file : {"cgroup", "mountinfo"}) unlink((root_ + "/proc/self/" + file).c_str());
    rmdir((root_ + "/proc/self").c_str());
    rmdir((root_ + "/proc").c_str());
    rmdir(root_.c_str());
  }
  const std::string& root() const { return root_; }
  // file: "cgroup" or "mountinfo" (the ones the destructor removes).
  void WriteSelf(const char* file, const uint8_t* data, size_t size) {
    WriteOrAbort(root_ + "/proc/self/" + file, data, size);
  }

 private:
  std::string root_;
};

}  // namespace headroom_fuzz
