// TempDir: a fresh directory under /tmp for one test, removed with everything in it when the test ends.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace headroom {

class TempDir {
 public:
  // `name` goes into the directory's name, so a leftover says which test made it.
  explicit TempDir(const std::string& name) {
    std::string pattern = "/tmp/headroom_" + name + "_XXXXXX";
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace headroom
