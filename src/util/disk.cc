// The real file system behind DiskInterface, plus the shared mkdir -p logic.
#include "headroom/util/disk.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "headroom/util/messages.h"
#include "headroom/util/path.h"
#include "headroom/util/metrics.h"

namespace headroom {

bool DiskInterface::MakeDirs(const std::string& path) {
  std::string dir(DirName(path));
  if (dir.empty()) return true;
  std::string err;
  TimeStamp mtime = Stat(dir, &err);
  if (mtime < 0) {
    Error("{}", err);
    return false;
  }
  if (mtime > 0) return true;  // exists already
  if (!MakeDirs(dir)) return false;
  return MakeDir(dir);
}

TimeStamp RealDiskInterface::Stat(const std::string& path, std::string* err) const {
  ScopedMetric metric = TimeScope("node stat");
  struct stat st;
  if (stat(path.c_str(), &st) < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return 0;
    *err = fmt::format("stat({}): {}", path, strerror(errno));
    return -1;
  }
  TimeStamp mtime = static_cast<TimeStamp>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  // A file stamped exactly at the epoch must not read as "missing".
  return mtime == 0 ? 1 : mtime;
}

bool RealDiskInterface::WriteFile(const std::string& path, const std::string& contents) {
  FILE* f = fopen(path.c_str(), "w");
  if (!f) {
    Error("WriteFile({}): Unable to create file. {}", path, strerror(errno));
    return false;
  }
  if (fwrite(contents.data(), 1, contents.size(), f) < contents.size()) {
    Error("WriteFile({}): Unable to write to the file. {}", path, strerror(errno));
    fclose(f);
    return false;
  }
  if (fclose(f) == EOF) {
    Error("WriteFile({}): Unable to close the file. {}", path, strerror(errno));
    return false;
  }
  return true;
}

bool RealDiskInterface::MakeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0777) < 0 && errno != EEXIST) {
    Error("mkdir({}): {}", path, strerror(errno));
    return false;
  }
  return true;
}

DiskInterface::ReadStatus RealDiskInterface::ReadFile(const std::string& path, std::string* contents,
                                                      std::string* err) {
  return ReadFileContents(path, contents, err);
}

DiskInterface::ReadStatus ReadFileContents(const std::string& path, std::string* contents, std::string* err) {
  using ReadStatus = DiskInterface::ReadStatus;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    *err = strerror(error);
    return error == ENOENT ? ReadStatus::kNotFound : ReadStatus::kOtherError;
  }
  struct stat st;
  if (fstat(fd, &st) == 0 && st.st_size > 0) contents->reserve(static_cast<size_t>(st.st_size));
  char buf[64 * 1024];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      *err = strerror(errno);
      close(fd);
      contents->clear();
      return ReadStatus::kOtherError;
    }
    contents->append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return ReadStatus::kOkay;
}

int RealDiskInterface::RemoveFile(const std::string& path) {
  if (unlink(path.c_str()) < 0) {
    if (errno == ENOENT) return 1;
    if (errno == EISDIR || errno == EPERM) {
      // unlink() refuses directories; ninja's clean removes empty ones too.
      if (rmdir(path.c_str()) == 0) return 0;
    }
    Error("remove({}): {}", path, strerror(errno));
    return -1;
  }
  return 0;
}

}  // namespace headroom
