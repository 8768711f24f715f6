// JobMeter: the one object the build loop uses to measure jobs' memory. Per-job cgroups when they can
// be made, else /proc sampling by process group; wait4's ru_maxrss as a floor; OOM attribution at the end.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "headroom/exec/process_runner.h"
#include "headroom/memory/build_guard.h"
#include "headroom/memory/cgroup_layout.h"
#include "headroom/memory/job_cgroups.h"
#include "headroom/memory/oom_attribution.h"
#include "headroom/memory/process_group_sampler.h"

namespace headroom {

// How a job's peak was measured, best first.
enum class PeakSource {
  kNone,
  kCgroup,   // the job cgroup's high-water mark (whole tree, exact)
  kSampled,  // the largest sum of RSS over the process group seen by /proc sampling (may miss short peaks)
  kRusage,   // wait4's ru_maxrss: the largest single process only (undercounts multi-process jobs)
};
const char* PeakSourceName(PeakSource source);  // "none", "cgroup", "sampled", "rusage"

struct JobMemoryResult {
  uint64_t peak_bytes = 0;  // cgroup figure when there is one, else the larger of sampled and rusage
  PeakSource peak_source = PeakSource::kNone;
  uint64_t cgroup_peak_bytes = 0;
  uint64_t sampled_peak_bytes = 0;
  uint64_t rusage_peak_bytes = 0;
  OomVerdict oom;
};

struct JobMeterOptions {
  std::string root;                 // prefix for /proc paths; "" is the real system
  bool use_cgroups = true;          // false forces /proc sampling
  int full_rescan_every = kDefaultFullRescanEvery;  // see ProcessGroupSampler
};

// What gives a build cgroups it may write, for the no-guard reason ("" when nothing would: no memory controller).
std::string CgroupAccessFix(CgroupVersion version, const std::string& error);

class JobMeter {
 public:
  // Tries to make the per-build cgroup from the layout; falls back to sampling, silently (see ArmGuard's why_not).
  JobMeter(const CgroupLayout& layout, JobMeterOptions options = {});
  // Uses the given per-build cgroups (nullptr: sample /proc), e.g. ones made inside a test's box cgroup.
  JobMeter(std::unique_ptr<JobCgroups> cgroups, JobMeterOptions options = {});
  ~JobMeter();

  bool uses_cgroups() const { return cgroups_ != nullptr; }
  // The per-build cgroup the jobs are made in (a real directory), "" when jobs are sampled instead.
  std::string jobs_cgroup_dir() const { return cgroups_ ? cgroups_->build_dir() : std::string(); }
  // Before starting job `id`: returns the directory for JobStartOptions::cgroup_dir, or "" when the job
  // will be measured by sampling (also when its cgroup could not be made).
  std::string PrepareJob(JobId id);
  // The child already waiting in that cgroup, for JobStartOptions::prepared (nullptr: none; the job joins it).
  PreparedLaunch* PreparedLaunchFor(JobId id);
  // Right after the start: the job's process group (sampled when the job has no cgroup).
  void JobStarted(JobId id, pid_t pgid);
  // Once per tick (every kDefaultSampleIntervalMs or so): refreshes every running job's usage and peak.
  void Sample();
  // The job's usage at the last Sample() and its largest usage so far (bytes).
  uint64_t CurrentBytes(JobId id) const;
  uint64_t PeakSoFar(JobId id) const;
  // Freezes / thaws the job through its cgroup. false: not possible here, SIGSTOP/SIGCONT its group instead.
  bool Freeze(JobId id);
  bool Thaw(JobId id);
  // After the runner reaped the job: its peak (and how it was measured) and the OOM verdict. Removes the
  // job's cgroup, or retries later while leftover processes still live in it.
  JobMemoryResult Finish(const JobExit& exit);
  std::vector<std::string> TakeWarnings();
  // The build is stopping while job `id` runs (the runner then signals it and reaps its leader). Its cgroup
  // is removed when the meter goes, after waiting up to a second for its last processes to finish exiting.
  void Abandon(JobId id);

  // The build guard over the per-build cgroup, capped at `limit_bytes` (build_guard.h). Returns it, or
  // nullptr with *why_not saying why the build runs unguarded. A second call keeps the armed guard.
  BuildGuard* ArmGuard(uint64_t limit_bytes, std::string* why_not);
  BuildGuard* guard() { return guard_.get(); }
  // True the first time it is asked: the guard (or its absence) is explained once per run, not per pass.
  bool FirstGuardAnnouncement() { return !std::exchange(guard_announced_, true); }

 private:
  struct Job {
    bool in_cgroup = false;
    pid_t pgid = -1;
    uint64_t current_bytes = 0;
    uint64_t peak_bytes = 0;  // maximum of the sampled figures (cgroup usage or process-group RSS)
    std::optional<uint64_t> system_oom_kills_at_start;
  };

  void RetryPendingRemovals();
  void RefreshSystemOomKills();

  JobMeterOptions options_;
  std::unique_ptr<JobCgroups> cgroups_;
  std::string cgroups_error_;          // why there are no per-job cgroups
  std::string cgroups_fix_;            // and what would give the build some (CgroupAccessFix)
  std::unique_ptr<BuildGuard> guard_;  // after cgroups_: released before the group is removed
  std::string guard_error_;
  bool guard_announced_ = false;
  ProcessGroupSampler sampler_;
  SystemOomCounter system_oom_;
  std::optional<uint64_t> system_oom_kills_;  // as of the last Sample()
  bool system_oom_read_ = false;
  std::map<JobId, Job> jobs_;
  std::vector<int> pending_removals_;
  std::vector<int> abandoned_;  // jobs of an aborted build; waited for in the destructor
  std::vector<std::string> warnings_;
  bool warned_job_cgroup_ = false;
};

}  // namespace headroom
