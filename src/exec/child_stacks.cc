// Implements the child stack slots: 64 KiB chunks cut into slots, a free list of slot tops, and the high-water mark
// read from the bytes a child left non-zero (every slot is zero when handed out: fresh memory, or cleared at give-back).
#include "headroom/exec/child_stacks.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace headroom {

namespace {

constexpr size_t kChunkBytes = 64 * 1024;

std::vector<void*>& FreeSlotTops() {
  static auto* tops = new std::vector<void*>;  // never destroyed: a child may still run on a slot at exit
  return *tops;
}

size_t& HighWater() {
  static size_t bytes = 0;
  return bytes;
}

bool MapChunk() {
  void* chunk = ::mmap(nullptr, kChunkBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (chunk == MAP_FAILED) return false;
  // Handed out from the chunk's start, so a build with few children touches few of its pages.
  for (size_t offset = kChunkBytes; offset >= kChildStackSlotBytes; offset -= kChildStackSlotBytes) {
    FreeSlotTops().push_back(static_cast<char*>(chunk) + offset);
  }
  return true;
}

// Bytes used: from the lowest non-zero byte up to the top.
size_t UsedBytes(const char* bottom) {
  size_t untouched = 0;
  while (untouched < kChildStackSlotBytes && bottom[untouched] == 0) ++untouched;
  return kChildStackSlotBytes - untouched;
}

}  // namespace

void* AcquireChildStack() {
  std::vector<void*>& tops = FreeSlotTops();
  if (tops.empty() && !MapChunk()) return nullptr;
  void* top = tops.back();
  tops.pop_back();
  return top;
}

void GiveBackChildStack(void* top) {
  if (top == nullptr) return;
  char* bottom = static_cast<char*>(top) - kChildStackSlotBytes;
  const size_t used = UsedBytes(bottom);
  if (used > HighWater()) HighWater() = used;
  std::memset(bottom + kChildStackSlotBytes - used, 0, used);
  FreeSlotTops().push_back(top);
}

size_t ChildStackHighWaterBytes() { return HighWater(); }

}  // namespace headroom
