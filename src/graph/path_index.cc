// Linear-probing path -> Node* table with cached hashes, and the string hash it uses.
#include "headroom/graph/path_index.h"

#include <cstring>

#include "headroom/graph/graph.h"

namespace headroom {

namespace {

constexpr size_t kInitialCapacity = 1024;

uint64_t Mix(uint64_t value) {
  value ^= value >> 32;
  value *= 0xd6e8feb86659fd93ULL;
  value ^= value >> 32;
  return value;
}

}  // namespace

uint64_t PathIndex::Hash(std::string_view path) {
  // Eight bytes at a time with a multiply-xorshift mix; paths share long prefixes, so every byte counts.
  uint64_t hash = 0x9e3779b97f4a7c15ULL ^ path.size();
  const char* p = path.data();
  size_t left = path.size();
  while (left >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    hash = Mix(hash ^ word) * 0x9e3779b97f4a7c15ULL;
    p += 8;
    left -= 8;
  }
  if (left > 0) {
    uint64_t word = 0;
    std::memcpy(&word, p, left);
    hash = Mix(hash ^ word) * 0x9e3779b97f4a7c15ULL;
  }
  return Mix(hash);
}

Node* PathIndex::Find(std::string_view path) const {
  if (slots_.empty()) return nullptr;
  const uint64_t hash = Hash(path);
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& slot = slots_[i];
    if (!slot.node) return nullptr;
    if (slot.hash == hash && slot.node->path == path) return slot.node;
  }
}

void PathIndex::Insert(Node* node) {
  // Keep the load below 5/8 so probe runs stay short.
  if ((size_ + 1) * 8 > slots_.size() * 5) Grow();
  Place(Hash(node->path), node);
  ++size_;
}

void PathIndex::Place(uint64_t hash, Node* node) {
  const size_t mask = slots_.size() - 1;
  size_t i = hash & mask;
  while (slots_[i].node) i = (i + 1) & mask;
  slots_[i] = Slot{hash, node};
}

void PathIndex::Grow() {
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.resize(old.empty() ? kInitialCapacity : old.size() * 2);
  for (const Slot& slot : old) {
    if (slot.node) Place(slot.hash, slot.node);
  }
}

}  // namespace headroom
