// libFuzzer target: DepsLog::Load of an arbitrary .ninja_deps (read from a scratch file).
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "headroom/logs/deps_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static headroom_fuzz::ScratchFile scratch("ninja_deps");
  const std::string& path = scratch.Write(data, size);
  headroom::State state;
  headroom::DepsLog log;
  std::string err;
  log.Load(path, &state, &err);
  return 0;
}
