// The two 64-bit hashes .ninja_log has used for command lines: MurmurHash64A (v5/v6) and rapidhash v1 (v7).
// Implemented from the algorithms' published descriptions; verified against hashes real ninja wrote.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace headroom {

// Austin Appleby's MurmurHash2, 64-bit variant for 64-bit platforms ("MurmurHash64A").
uint64_t MurmurHash64A(const void* data, size_t length, uint64_t seed);

// rapidhash as first released (V1, "fast" + "unrolled" build options), with its default secrets.
uint64_t RapidHashV1(const void* data, size_t length, uint64_t seed);

// The seeds ninja uses for command hashes.
inline constexpr uint64_t kNinjaMurmurSeed = 0xDECAFBADDECAFBADull;
inline constexpr uint64_t kRapidHashDefaultSeed = 0xbdd89aa982704029ull;

}  // namespace headroom
