// The file-system seam: everything the engine does to files goes through DiskInterface,
// so whole builds can run in unit tests against a fake.
#pragma once

#include <string>

#include "headroom/util/timestamp.h"

namespace headroom {

class DiskInterface {
 public:
  enum class ReadStatus { kOkay, kNotFound, kOtherError };

  virtual ~DiskInterface() = default;
  // mtime in ns; 0 when missing (ENOENT/ENOTDIR); -1 with *err set on other errors.
  // A real mtime of 0 is reported as 1 so it never reads as missing.
  virtual TimeStamp Stat(const std::string& path, std::string* err) const = 0;
  virtual bool WriteFile(const std::string& path, const std::string& contents) = 0;
  // Creates one directory; true if created or already there.
  virtual bool MakeDir(const std::string& path) = 0;
  virtual ReadStatus ReadFile(const std::string& path, std::string* contents, std::string* err) = 0;
  // 0 = removed, 1 = did not exist, -1 = error (printed).
  virtual int RemoveFile(const std::string& path) = 0;

  // mkdir -p of the directory holding `path`.
  bool MakeDirs(const std::string& path);
};

// Reads the whole file into *contents, sized up front from fstat so a large log is read with one
// allocation. kNotFound when it does not exist; *err holds strerror for any failure.
DiskInterface::ReadStatus ReadFileContents(const std::string& path, std::string* contents, std::string* err);

// The real file system.
class RealDiskInterface : public DiskInterface {
 public:
  TimeStamp Stat(const std::string& path, std::string* err) const override;
  bool WriteFile(const std::string& path, const std::string& contents) override;
  bool MakeDir(const std::string& path) override;
  ReadStatus ReadFile(const std::string& path, std::string* contents, std::string* err) override;
  int RemoveFile(const std::string& path) override;
};

}  // namespace headroom
