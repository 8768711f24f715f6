// SlotLedger: per-job slot counts from offers handed out and tokens read back (docs/jobserver.md).
#include "headroom/exec/jobserver_slots.h"

#include <algorithm>
#include <vector>

namespace headroom {

void SlotLedger::AddJob(JobId id, std::unique_ptr<TokenChannel> channel) {
  JobSlots& slots = jobs_[id];
  slots = JobSlots();
  slots.channel = std::move(channel);
}

size_t SlotLedger::RemoveJob(JobId id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return 0;
  size_t max_held = it->second.max_held;
  jobs_.erase(it);
  return max_held;
}

void SlotLedger::Reconcile(const std::function<void(JobId, size_t)>& changed) {
  for (auto& [id, slots] : jobs_) {
    const size_t before = slots.held + slots.offered;  // what the controller was last told
    const size_t drained = slots.channel->Drain();
    // What is in the channel now is either our untaken offer or tokens given back; both leave the job.
    const size_t handed = slots.held + slots.offered;
    if (slots.offered > 0 && drained == 0) slots.asked = true;
    slots.held = drained >= handed ? 0 : handed - drained;
    slots.offered = 0;
    slots.max_held = std::max(slots.max_held, slots.held);
    if (slots.held != before && changed) changed(id, slots.held);
  }
}

size_t SlotLedger::Offer(size_t capacity, const std::function<bool(JobId)>& may_offer) {
  if (capacity == 0 || jobs_.empty()) return 0;
  // Round order: the jobs after the last one offered to, then from the start up to it.
  std::vector<JobId> order;
  order.reserve(jobs_.size());
  for (auto it = jobs_.upper_bound(last_offered_); it != jobs_.end(); ++it) order.push_back(it->first);
  for (auto it = jobs_.begin(); it != jobs_.end() && it->first <= last_offered_; ++it) order.push_back(it->first);
  std::stable_partition(order.begin(), order.end(), [&](JobId id) { return jobs_[id].asked; });

  size_t placed = 0;
  for (JobId id : order) {
    if (placed == capacity) break;
    JobSlots& slots = jobs_[id];
    if (slots.offered > 0 || !may_offer(id)) continue;
    if (!slots.channel->Offer()) continue;
    slots.offered = 1;
    last_offered_ = id;
    ++placed;
  }
  return placed;
}

size_t SlotLedger::extra_slots() const {
  size_t total = 0;
  for (const auto& [id, slots] : jobs_) total += slots.held + slots.offered;
  return total;
}

size_t SlotLedger::held(JobId id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? 0 : it->second.held;
}

size_t SlotLedger::offered(JobId id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? 0 : it->second.offered;
}

}  // namespace headroom
