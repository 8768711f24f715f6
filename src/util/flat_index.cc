// HashString, the string hash behind FlatIndex (include/headroom/util/flat_index.h).
#include "headroom/util/flat_index.h"

#include "headroom/util/hashes.h"

namespace headroom {

uint64_t HashString(std::string_view text) {
  // rapidhash, already here for .ninja_log v7: on 50-byte paths it is 3-4x faster than a word-at-a-time
  // multiply-xorshift, and interning paths calls it for every path the manifest and the logs name.
  return RapidHashV1(text.data(), text.size(), kRapidHashDefaultSeed);
}

}  // namespace headroom
