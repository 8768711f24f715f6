// libFuzzer target: HashLog::Parse of an arbitrary .headroom_hashes; whatever it accepts must write back and
// read again to the same records.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "headroom/logs/hash_log.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  headroom::HashLog log;
  std::string err;
  if (!log.Parse(std::string_view(reinterpret_cast<const char*>(data), size), &err)) {
    if (log.size() != 0 || err.empty()) std::abort();  // refused input must leave nothing behind
    return 0;
  }
  headroom::HashLog again;
  if (!again.Parse(log.Serialize(), &err) || again.size() != log.size()) std::abort();
  return 0;
}
