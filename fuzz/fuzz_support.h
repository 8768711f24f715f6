// Shared pieces of the libFuzzer targets: a disk that holds no files, and a scratch file that
// file-based loaders (build log, deps log, history) read the fuzz input from.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "headroom/util/disk.h"

namespace headroom_fuzz {

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

// A per-process file under $TMPDIR (or /tmp), rewritten with each input; loaders may truncate or
// delete it (recovery paths), which is why it is recreated every time.
class ScratchFile {
 public:
  explicit ScratchFile(const char* name) {
    const char* tmp = std::getenv("TMPDIR");
    path_ = std::string(tmp && *tmp ? tmp : "/tmp") + "/headroom-fuzz-" + std::to_string(getpid()) + "-" + name;
  }
  ~ScratchFile() { unlink(path_.c_str()); }
  // Returns the path holding exactly `size` bytes of `data`.
  const std::string& Write(const uint8_t* data, size_t size) {
    int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) std::abort();
    size_t done = 0;
    while (done < size) {
      ssize_t n = write(fd, data + done, size - done);
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
    close(fd);
    return path_;
  }

 private:
  std::string path_;
};

}  // namespace headroom_fuzz
