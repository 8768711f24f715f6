// A kernel-generated text file (procfs, cgroupfs) opened once and re-read with pread, so periodic
// readings cost one syscall per file instead of open+read+close.
#pragma once

#include <string>

namespace headroom {

class KernelFile {
 public:
  KernelFile() = default;
  explicit KernelFile(std::string path) : path_(std::move(path)) {}
  ~KernelFile();
  KernelFile(KernelFile&& other) noexcept;
  KernelFile& operator=(KernelFile&& other) noexcept;
  KernelFile(const KernelFile&) = delete;
  KernelFile& operator=(const KernelFile&) = delete;

  // Reads the whole file from offset 0 into *contents. Opens it on first use and re-opens once if the
  // cached descriptor went stale. Returns false with *err set (no throw) when it cannot be read.
  bool Read(std::string* contents, std::string* err);
  // Writes `contents` through the same descriptor later reads use (reopened read-write if needed), as
  // v2's memory.peak wants: a write resets the high-water mark seen through that descriptor only.
  bool Write(const std::string& contents, std::string* err);
  const std::string& path() const { return path_; }
  bool empty() const { return path_.empty(); }

 private:
  bool Open(std::string* err);
  void Close();

  std::string path_;
  int fd_ = -1;
  bool writable_ = false;
};

// One-shot helpers for discovery-time reads and writes (not on the hot path).
bool ReadWholeFile(const std::string& path, std::string* contents, std::string* err);
bool WriteWholeFile(const std::string& path, const std::string& contents, std::string* err);

}  // namespace headroom
