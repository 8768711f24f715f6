// What jobserver slots cost in memory (docs/jobserver.md): each extra slot a job takes is one more
// pipeline or sub-job inside it, charged against the budget at a per-slot figure its family taught, or
// until then at the job's own admitted peak. Pure logic; MemoryController asks and charges.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>

namespace headroom {

class SlotCosts {
 public:
  // One more slot of a job of `family` admitted at `job_peak` bytes: what the family taught, else the
  // job's own peak (one more pipeline as heavy as the whole job: a guess that errs on the safe side).
  uint64_t CostPerSlot(const std::string& family, uint64_t job_peak) const;
  // The job now holds (or is being offered) `slots` extra slots. Its per-slot figure is fixed when it
  // first gets one, so a charge never moves under a running job.
  void SetSlots(uint64_t job, const std::string& family, uint64_t job_peak, size_t slots);
  // Bytes charged for the job's slots now (0 without any).
  uint64_t Charge(uint64_t job) const;
  size_t Slots(uint64_t job) const;
  size_t MaxSlots(uint64_t job) const;  // the most it held or was offered at once
  // The job ended having peaked at `peak_bytes`. One that held n >= 1 slots at most teaches its family
  // peak / (n + 1) per slot (its n + 1 pipelines taken as alike); the family keeps the largest figure seen.
  void JobEnded(uint64_t job, uint64_t peak_bytes);
  // What the family learned; 0 when nothing yet.
  uint64_t Learned(const std::string& family) const;

 private:
  struct JobSlots {
    std::string family;
    uint64_t per_slot = 0;
    size_t slots = 0;
    size_t max_slots = 0;
  };
  std::unordered_map<uint64_t, JobSlots> jobs_;
  std::unordered_map<std::string, uint64_t> learned_;
};

}  // namespace headroom
