// MemoryController's part in headroom's jobserver (docs/jobserver.md): whether memory allows a running job
// one more slot, and charging the slots it holds. Kept apart from memory_controller.cc; SlotCosts does
// the arithmetic.
#include <fmt/format.h>

#include <algorithm>

#include "headroom/admission/memory_controller.h"
#include "headroom/graph/graph.h"
#include "headroom/util/byte_size.h"

namespace headroom {

namespace {

// A running job's estimate as predicted, not the share of the budget a guess is capped at for admission; 0 when its
// edge is unknown or not tracked.
uint64_t UncappedEstimate(const SchedulerCore& core, const Edge* edge) {
  const EstimateFigures* estimate = edge ? core.FindEstimate(edge->id) : nullptr;
  return estimate ? estimate->peak_bytes : 0;
}

}  // namespace

bool MemoryController::MayGrantSlot(Edge* edge, JobId id) {
  auto it = running_.find(id);
  if (it == running_.end()) return false;
  // A frozen job means the safety net is already taking memory back.
  for (const auto& [other_id, running] : running_) {
    if (running.job->frozen) return false;
  }
  EnsureGuard();
  // Offers go to each running job in turn every pass: they share the pass's reading (as admission does)
  // rather than reading memory once per job; a granted slot is charged to its job at once either way.
  const int64_t now = parts_.clock->NowMs();
  const MemoryReading reading = AdmissionReading(now);
  const uint64_t budget = core_.policy().Budget(reading);
  if (budget == 0) return true;  // nothing known about memory: -j alone decides
  const std::vector<RunningJob> jobs = RunningJobs();  // with the slots already charged
  uint64_t owed = 0;
  for (const RunningJob& job : jobs) owed += core_.policy().Owed(job, now);
  const RunningJob& job = *it->second.job;
  // Before its family taught a per-slot figure, one pipeline is taken to weigh the job's estimate as
  // predicted, not the share of the budget a guess is capped at for admission (a capped guess would make
  // every budget, however tight, look roomy enough for a slot).
  const uint64_t job_peak = std::max(job.predicted_peak, UncappedEstimate(core_, edge));
  const uint64_t cost = slot_costs_.CostPerSlot(job.family_key, job_peak);
  const uint64_t room = core_.policy().Headroom(reading, jobs);
  // A ready job that waits comes first: a slot may not take the memory the least demanding of them needs
  // (a wait for a probe or a stagger, with room to spare, does not stop slots; a wait for memory does).
  const uint64_t needed = owed + core_.policy().Reserve(budget) + cost + core_.LeastWaitingNeed(budget);
  return room >= needed;
}

void MemoryController::SlotsChanged(Edge* edge, JobId id, size_t slots) {
  auto it = running_.find(id);
  if (it == running_.end()) return;
  const size_t most_before = slot_costs_.MaxSlots(id);
  // the uncapped estimate, as in MayGrantSlot
  const uint64_t job_peak = std::max(it->second.job->predicted_peak, UncappedEstimate(core_, edge));
  slot_costs_.SetSlots(id, it->second.job->family_key, job_peak, slots);
  // Once per new high: offers are withdrawn and made again every pass.
  if (explain_ && slots > most_before && edge && !edge->outputs.empty()) {
    Explain(fmt::format("jobserver: {} offered extra slot {}, {} charged", edge->outputs[0]->path, slots,
                        FormatBytes(slot_costs_.Charge(id))));
  }
}

}  // namespace headroom
