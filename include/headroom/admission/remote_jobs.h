// RemoteJobs: what MemoryController keeps about remote-eligible jobs (docs/scale-out.md): the remote pool's slots,
// each running remote job's residual estimate, the moment one falls back to a local compile, the mode its peak is
// recorded under, and the counts the summary prints (report/summary.cc formats them). Pure logic; the controller feeds it samples and job ends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

#include "headroom/admission/remote_pool.h"
#include "headroom/estimator/exec_mode.h"

namespace headroom {

struct RemoteCounts {
  size_t remote = 0;     // remote-eligible jobs that finished without falling back
  size_t fell_back = 0;  // remote-eligible jobs seen compiling here (tree past the residual), or retried locally
  size_t local = 0;      // jobs classified local
  size_t most_at_once = 0;  // the pool's high-water mark
};

class RemoteJobs {
 public:
  explicit RemoteJobs(size_t pool_depth) : pool_(pool_depth) {}

  // Whether a remote-eligible job may start now: the pool has a free slot. (A local job asks admission only.)
  bool MayStartRemote() const { return pool_.HasRoom(); }

  // A remote-eligible job started holding a slot; `residual_bytes` is what it is charged locally.
  // False (and nothing recorded) when the pool was full: the caller should have asked MayStartRemote.
  bool StartedRemote(uint64_t job, uint64_t residual_bytes);
  // A local job started (counted for the summary only).
  void StartedLocal() { ++counts_.local; }

  // A sample of a running job's process tree. True exactly once, on the sample where a remote job is first seen
  // compiling here: its slot is given back, and from then on the caller charges it its local estimate.
  bool Observe(uint64_t job, uint64_t tree_bytes);

  // True while `job` runs remote (holds a slot and has not fallen back).
  bool IsRemote(uint64_t job) const { return pool_.Holds(job); }

  // A remote-eligible job ended (any outcome). Returns the mode its peak belongs to in history: remote when it
  // ran on the farm, local when it fell back (its peak is a local compile's, or `launcher_said_local`: its output
  // says so, LauncherReportedLocalRun). Unknown jobs answer local.
  ExecMode Finished(uint64_t job, uint64_t peak_bytes, bool launcher_said_local = false);

  const RemoteCounts& counts() const { return counts_; }
  const RemotePool& pool() const { return pool_; }

 private:
  struct Job {
    uint64_t residual_bytes = 0;
    bool fell_back = false;
  };
  RemotePool pool_;
  std::map<uint64_t, Job> jobs_;
  RemoteCounts counts_;
};

}  // namespace headroom
