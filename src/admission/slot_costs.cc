// SlotCosts: per-slot memory figures per family, and the charge of each job's slots.
#include "headroom/admission/slot_costs.h"

#include <algorithm>

namespace headroom {

uint64_t SlotCosts::CostPerSlot(const std::string& family, uint64_t job_peak) const {
  uint64_t learned = Learned(family);
  return learned > 0 ? learned : job_peak;
}

void SlotCosts::SetSlots(uint64_t job, const std::string& family, uint64_t job_peak, size_t slots) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) {
    if (slots == 0) return;
    it = jobs_.emplace(job, JobSlots{family, CostPerSlot(family, job_peak), 0, 0}).first;
  }
  it->second.slots = slots;
  it->second.max_slots = std::max(it->second.max_slots, slots);
}

uint64_t SlotCosts::Charge(uint64_t job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? 0 : it->second.per_slot * it->second.slots;
}

size_t SlotCosts::Slots(uint64_t job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? 0 : it->second.slots;
}

size_t SlotCosts::MaxSlots(uint64_t job) const {
  auto it = jobs_.find(job);
  return it == jobs_.end() ? 0 : it->second.max_slots;
}

void SlotCosts::JobEnded(uint64_t job, uint64_t peak_bytes) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return;
  const JobSlots& slots = it->second;
  if (slots.max_slots > 0 && peak_bytes > 0 && !slots.family.empty()) {
    uint64_t per_slot = peak_bytes / (slots.max_slots + 1);
    uint64_t& learned = learned_[slots.family];
    learned = std::max(learned, per_slot);
  }
  jobs_.erase(it);
}

uint64_t SlotCosts::Learned(const std::string& family) const {
  auto it = learned_.find(family);
  return it == learned_.end() ? 0 : it->second;
}

}  // namespace headroom
