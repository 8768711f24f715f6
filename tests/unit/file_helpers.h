// Small helpers the unit tests share: whole-file reads and writes in binary, a path's existence, and an EvalString
// holding plain text. Shared here so that each is defined once (the tests also compile in unity batches).
#pragma once

#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>

#include "headroom/graph/eval_env.h"

namespace headroom::test_files {

inline std::string ReadBytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

inline void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

inline bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

inline EvalString Literal(const std::string& text) {
  EvalString value;
  value.AddText(text);
  return value;
}

}  // namespace headroom::test_files
