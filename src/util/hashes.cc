// MurmurHash64A and rapidhash v1, the command-line hashes of .ninja_log v5/v6 and v7.
// Both read their input in little-endian order (the only byte order headroom targets).
#include "headroom/util/hashes.h"

#include <cstring>

namespace headroom {
namespace {

uint64_t Load64(const uint8_t* p) {
  uint64_t value;
  memcpy(&value, p, sizeof(value));
  return value;
}

uint64_t Load32(const uint8_t* p) {
  uint32_t value;
  memcpy(&value, p, sizeof(value));
  return value;
}

// --- MurmurHash64A ---------------------------------------------------------------------------

constexpr uint64_t kMurmurMultiplier = 0xc6a4a7935bd1e995ull;
constexpr int kMurmurShift = 47;

uint64_t MurmurMixBlock(uint64_t block) {
  block *= kMurmurMultiplier;
  block ^= block >> kMurmurShift;
  return block * kMurmurMultiplier;
}

// --- rapidhash v1 ----------------------------------------------------------------------------

constexpr uint64_t kRapidSecret[3] = {0x2d358dccaa6c78a5ull, 0x8bb84b93962eacc9ull, 0x4b33a62ed433d4a3ull};

// Full 64x64->128 multiply; a becomes the low half, b the high half.
void RapidMultiply(uint64_t* a, uint64_t* b) {
  unsigned __int128 product = static_cast<unsigned __int128>(*a) * *b;
  *a = static_cast<uint64_t>(product);
  *b = static_cast<uint64_t>(product >> 64);
}

uint64_t RapidMix(uint64_t a, uint64_t b) {
  RapidMultiply(&a, &b);
  return a ^ b;
}

// Mixes one 16-byte lane at p into `lane` using the given secret.
uint64_t RapidLane(const uint8_t* p, uint64_t secret, uint64_t lane) {
  return RapidMix(Load64(p) ^ secret, Load64(p + 8) ^ lane);
}

}  // namespace

uint64_t MurmurHash64A(const void* data, size_t length, uint64_t seed) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  uint64_t h = seed ^ (length * kMurmurMultiplier);
  const size_t block_bytes = length & ~size_t{7};
  for (size_t i = 0; i < block_bytes; i += 8) {
    h ^= MurmurMixBlock(Load64(bytes + i));
    h *= kMurmurMultiplier;
  }
  // The 1..7 trailing bytes fill a little-endian word (bytes are unsigned).
  const size_t tail = length & 7;
  if (tail != 0) {
    uint64_t last = 0;
    for (size_t i = 0; i < tail; ++i) last |= static_cast<uint64_t>(bytes[block_bytes + i]) << (8 * i);
    h ^= last;
    h *= kMurmurMultiplier;
  }
  h ^= h >> kMurmurShift;
  h *= kMurmurMultiplier;
  h ^= h >> kMurmurShift;
  return h;
}

uint64_t RapidHashV1(const void* data, size_t length, uint64_t seed) {
  const auto* p = static_cast<const uint8_t*>(data);
  seed ^= RapidMix(seed ^ kRapidSecret[0], kRapidSecret[1]) ^ length;
  uint64_t a = 0, b = 0;
  if (length <= 16) {
    if (length >= 4) {
      // Two overlapping 32-bit reads from each end cover every byte of 4..16-byte inputs.
      const uint8_t* last = p + length - 4;
      const size_t delta = (length & 24) >> (length >> 3);
      a = (Load32(p) << 32) | Load32(last);
      b = (Load32(p + delta) << 32) | Load32(last - delta);
    } else if (length > 0) {
      a = (static_cast<uint64_t>(p[0]) << 56) | (static_cast<uint64_t>(p[length >> 1]) << 32) | p[length - 1];
    }
  } else {
    size_t remaining = length;
    if (remaining > 48) {
      // Three independent lanes over 48-byte stripes, unrolled to 96 bytes per iteration.
      uint64_t lane1 = seed, lane2 = seed;
      while (remaining >= 96) {
        seed = RapidLane(p, kRapidSecret[0], seed);
        lane1 = RapidLane(p + 16, kRapidSecret[1], lane1);
        lane2 = RapidLane(p + 32, kRapidSecret[2], lane2);
        seed = RapidLane(p + 48, kRapidSecret[0], seed);
        lane1 = RapidLane(p + 64, kRapidSecret[1], lane1);
        lane2 = RapidLane(p + 80, kRapidSecret[2], lane2);
        p += 96;
        remaining -= 96;
      }
      if (remaining >= 48) {
        seed = RapidLane(p, kRapidSecret[0], seed);
        lane1 = RapidLane(p + 16, kRapidSecret[1], lane1);
        lane2 = RapidLane(p + 32, kRapidSecret[2], lane2);
        p += 48;
        remaining -= 48;
      }
      seed ^= lane1 ^ lane2;
    }
    if (remaining > 16) {
      seed = RapidMix(Load64(p) ^ kRapidSecret[2], Load64(p + 8) ^ seed ^ kRapidSecret[1]);
      if (remaining > 32) seed = RapidMix(Load64(p + 16) ^ kRapidSecret[2], Load64(p + 24) ^ seed);
    }
    // The final 16 bytes of the input (possibly overlapping bytes already mixed).
    a = Load64(p + remaining - 16);
    b = Load64(p + remaining - 8);
  }
  a ^= kRapidSecret[1];
  b ^= seed;
  RapidMultiply(&a, &b);
  return RapidMix(a ^ kRapidSecret[0] ^ length, b ^ kRapidSecret[1]);
}

}  // namespace headroom
