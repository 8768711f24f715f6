// Slot accounting of headroom's jobserver (docs/jobserver.md): which job holds how many extra slots,
// counted from what headroom handed out and read back through each job's private channel. Pure logic;
// the channels are a seam (fifos in JobserverServer, fakes in tests).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>

#include "headroom/exec/process_runner.h"

namespace headroom {

// One job's private token channel.
class TokenChannel {
 public:
  virtual ~TokenChannel() = default;
  // Places one token in the channel; false when it cannot (the offer is then not made).
  virtual bool Offer() = 0;
  // Reads back every token now in the channel without blocking; returns how many there were.
  virtual size_t Drain() = 0;
};

class SlotLedger {
 public:
  struct JobSlots {
    std::unique_ptr<TokenChannel> channel;
    size_t held = 0;      // offers the job took and has not given back
    size_t offered = 0;   // 0 or 1: a token sitting in its channel now
    size_t max_held = 0;  // the most it held at once (what its peak was measured with)
    bool asked = false;   // it took a token at least once: it wants slots, so it is offered first
  };

  // A job started with its own channel (its implicit slot needs no token).
  void AddJob(JobId id, std::unique_ptr<TokenChannel> channel);
  // The job ended, however it ended: whatever it held or was offered is simply no longer counted.
  // Returns the most slots it held at once.
  size_t RemoveJob(JobId id);
  void Clear() { jobs_.clear(); }

  // Reads every channel back. A consumed offer becomes a held slot; a token the job wrote back frees a held
  // one; a job writing back more than it took only drops to 0 (headroom counts what it handed out, never
  // what it reads, so nothing a client writes can enlarge the pool). Afterwards no offer is outstanding.
  // Calls `changed(id, held)` for every job whose count changed.
  void Reconcile(const std::function<void(JobId, size_t)>& changed);

  // Offers one token to each job in turn (jobs that asked before first, then the others, each group in
  // rotation so an unwanted offer moves on) while `capacity` lasts and `may_offer(id)` agrees. Returns the
  // number placed. Offers count in extra_slots() until the next Reconcile withdraws what was not taken.
  size_t Offer(size_t capacity, const std::function<bool(JobId)>& may_offer);

  // Slots beyond the jobs' own: held plus offered, over all jobs.
  size_t extra_slots() const;
  size_t held(JobId id) const;
  size_t offered(JobId id) const;
  bool empty() const { return jobs_.empty(); }

 private:
  std::map<JobId, JobSlots> jobs_;
  JobId last_offered_ = -1;  // rotation: the next round starts after this job
};

}  // namespace headroom
