// libFuzzer target: BuildLog::Load of an arbitrary .ninja_log (read from a scratch file).
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "headroom/logs/build_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static headroom_fuzz::ScratchFile scratch("ninja_log");
  const std::string& path = scratch.Write(data, size);
  headroom::BuildLog log;
  std::string err;
  log.Load(path, &err);
  return 0;
}
