// libFuzzer target: UserStore::Parse of an arbitrary per-user store file, then the round trip the store makes
// under its lock (serialise what was read, parse it again): what headroom writes it must read back cleanly.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "headroom/history/user_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using headroom::UserStore;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  UserStore::Contents contents;
  UserStore::Parse(text, "fuzz", &contents);
  if (contents.version > UserStore::kVersion) return 0;  // a newer format is never rewritten
  headroom::UserStoreLimits limits;
  limits.max_age_s = INT64_MAX / 4;
  const std::string written = UserStore::Serialise(contents, limits, 0);
  UserStore::Contents reread;
  if (!UserStore::Parse(written, "fuzz", &reread).empty()) std::abort();
  if (UserStore::Serialise(reread, limits, 0) != written) std::abort();
  return 0;
}
