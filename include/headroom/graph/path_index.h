// PathIndex: the open-addressing hash table that interns paths to Nodes inside State.
// A flat table (one probe usually touches one cache line) because loading a large manifest is dominated by lookups.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace headroom {

struct Node;

class PathIndex {
 public:
  Node* Find(std::string_view path) const;
  // Adds `node` under node->path; the path must not be present yet.
  void Insert(Node* node);
  size_t size() const { return size_; }

  template <typename Visit>
  void ForEach(Visit visit) const {
    for (const Slot& slot : slots_) {
      if (slot.node) visit(slot.node);
    }
  }

  static uint64_t Hash(std::string_view path);

 private:
  struct Slot {
    uint64_t hash = 0;
    Node* node = nullptr;  // nullptr = empty slot
  };

  void Grow();
  void Place(uint64_t hash, Node* node);

  std::vector<Slot> slots_;  // capacity is a power of two (or zero)
  size_t size_ = 0;
};

}  // namespace headroom
