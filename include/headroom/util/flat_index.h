// FlatIndex: an open-addressing hash index from string keys to items stored elsewhere (graph nodes, log
// entries), and HashString, its hash. Flat with cached hashes: loading a large build is dominated by lookups.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace headroom {

// 64-bit hash of a path-like string; every byte counts because paths share long prefixes.
uint64_t HashString(std::string_view text);

// Maps KeyOf()(item) -> item for items that never move while indexed (deque elements, heap objects).
// Linear probing over {hash, item} slots: a lookup usually touches one cache line of the table plus
// the item's key, against three or four scattered nodes in std::unordered_map.
template <typename T, typename KeyOf>
class FlatIndex {
 public:
  T* Find(std::string_view key) const { return Find(key, HashString(key)); }
  // With the key's HashString already computed (a miss followed by Insert hashes once).
  T* Find(std::string_view key, uint64_t hash) const {
    if (slots_.empty()) return nullptr;
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
      const Slot& slot = slots_[i];
      if (!slot.item) return nullptr;
      if (slot.hash == hash && KeyOf()(*slot.item) == key) return slot.item;
    }
  }

  // Adds `item` under its key, which must not be present yet; `hash` is HashString of that key.
  void Insert(T* item) { Insert(item, HashString(KeyOf()(*item))); }
  void Insert(T* item, uint64_t hash) {
    if (NeedsGrowth(size_ + 1)) Rehash(Capacity(size_ + 1));
    Place(hash, item);
    ++size_;
  }

  // Sizes the table for `count` items up front (loading a file of known length), so it never rehashes.
  void Reserve(size_t count) {
    if (NeedsGrowth(count)) Rehash(Capacity(count));
  }

  void Clear() {
    slots_.clear();
    size_ = 0;
  }

  size_t size() const { return size_; }
  size_t bucket_count() const { return slots_.size(); }

  template <typename Visit>
  void ForEach(Visit visit) const {
    for (const Slot& slot : slots_) {
      if (slot.item) visit(slot.item);
    }
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    T* item = nullptr;  // nullptr = empty slot
  };

  // Loads stay below 5/8 so probe runs stay short.
  bool NeedsGrowth(size_t count) const { return count * 8 > slots_.size() * 5; }
  static size_t Capacity(size_t count) {
    size_t capacity = 1024;
    while (count * 8 > capacity * 5) capacity *= 2;
    return capacity;
  }

  void Place(uint64_t hash, T* item) {
    const size_t mask = slots_.size() - 1;
    size_t i = hash & mask;
    while (slots_[i].item) i = (i + 1) & mask;
    slots_[i] = Slot{hash, item};
  }

  void Rehash(size_t capacity) {
    const std::vector<Slot> previous = std::exchange(slots_, std::vector<Slot>(capacity));
    for (const Slot& slot : previous) {
      if (slot.item) Place(slot.hash, slot.item);
    }
  }

  std::vector<Slot> slots_;  // capacity is a power of two (or zero)
  size_t size_ = 0;
};

}  // namespace headroom
