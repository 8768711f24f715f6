// RemoteJobs: slots, fallback detection and per-mode outcomes of remote-eligible jobs.
#include "headroom/admission/remote_jobs.h"

#include <algorithm>

#include "headroom/admission/remote_fallback.h"

namespace headroom {

bool RemoteJobs::StartedRemote(uint64_t job, uint64_t residual_bytes) {
  if (!pool_.Take(job)) return false;
  jobs_[job] = Job{residual_bytes, false};
  counts_.most_at_once = std::max(counts_.most_at_once, pool_.in_use());
  return true;
}

bool RemoteJobs::Observe(uint64_t job, uint64_t tree_bytes) {
  auto it = jobs_.find(job);
  if (it == jobs_.end() || it->second.fell_back) return false;
  if (!LooksLikeLocalFallback(tree_bytes, it->second.residual_bytes)) return false;
  it->second.fell_back = true;
  pool_.Release(job);  // the farm is not running it: the slot can take another remote job
  return true;
}

ExecMode RemoteJobs::Finished(uint64_t job, uint64_t peak_bytes, bool launcher_said_local) {
  auto it = jobs_.find(job);
  if (it == jobs_.end()) return ExecMode::kLocal;
  // A peak past the threshold between two samples is a fallback too.
  bool fell_back = it->second.fell_back || launcher_said_local ||
                   LooksLikeLocalFallback(peak_bytes, it->second.residual_bytes);
  pool_.Release(job);
  jobs_.erase(it);
  ++(fell_back ? counts_.fell_back : counts_.remote);
  return fell_back ? ExecMode::kLocal : ExecMode::kRemote;
}


}  // namespace headroom
