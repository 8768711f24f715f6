// Per-job cgroups: one parent cgroup per build and a child per job, so a job's whole process tree is
// accounted (peak, OOM kills, current usage) and can be frozen. v1 (memory + freezer) and v2. Emptied
// job cgroups that hold almost no charge are recycled for later jobs instead of removed and remade.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "headroom/exec/prepared_launch.h"
#include "headroom/memory/cgroup_layout.h"
#include "headroom/memory/kernel_file.h"

namespace headroom {

struct JobCgroupsOptions {
  CgroupVersion version = CgroupVersion::kNone;
  // Where the per-build cgroup is made: the own memory cgroup, or a delegated v2 directory.
  std::string parent_dir;
  // v1 only: the own cgroup in a separate freezer hierarchy ("" = freeze unsupported, caller SIGSTOPs).
  std::string v1_freezer_parent_dir;
  // Name of the per-build cgroup; one per headroom process so parallel builds do not collide.
  std::string build_name;
  // v2 only: when the parent holds processes (so its memory controller cannot be enabled for children),
  // move this process into <parent>/headroom.self first. Needed in containers whose root cgroup is ours.
  bool v2_move_self_to_leaf = true;
  // Reuse an emptied job cgroup whose leftover charge (page cache, slab) is at most this many bytes;
  // 0 turns recycling off. Its readings are taken relative to what was left, so the bound is also the
  // most a later job's peak can be underestimated by if that leftover is reclaimed while it runs.
  uint64_t recycle_max_leftover_bytes = 4ull << 20;
  // Keep a child waiting in each spare cgroup (PreparedLaunch), joined ahead of time, for the next job to be handed
  // to: on v1, where joining at the job's start waits out an RCU grace period. Needs recycling.
  bool prepare_launches = false;
};

// Options for this process from its discovered layout ("headroom-<pid>" under the own cgroup).
JobCgroupsOptions DefaultJobCgroupsOptions(const CgroupLayout& layout);

class JobCgroups {
 public:
  // Makes the per-build cgroup. Returns nullptr with *err when cgroups cannot be created here (not root,
  // no delegation, no memory controller); the caller then samples /proc instead.
  static std::unique_ptr<JobCgroups> Create(const JobCgroupsOptions& options, std::string* err);
  // Removes every cgroup it made (best effort: ones still holding processes stay).
  ~JobCgroups();

  // Makes the job's cgroup and returns its directory, for JobStartOptions::cgroup_dir; "" with *err on failure.
  std::string CreateJob(int job_key, std::string* err);
  // The child waiting in the job's cgroup, for JobStartOptions::prepared; nullptr when there is none. It stays
  // owned here (a child never handed its job is killed before its cgroup is removed or reused).
  PreparedLaunch* PreparedLaunchFor(int job_key);
  // Live usage (v2 memory.current, v1 memory.usage_in_bytes); includes the page cache the job made.
  std::optional<uint64_t> CurrentBytes(int job_key);
  // High-water mark of the whole tree (v2 memory.peak, v1 memory.max_usage_in_bytes); nullopt on kernels
  // without it (v2 before 5.19): the caller keeps the maximum of CurrentBytes instead.
  std::optional<uint64_t> PeakBytes(int job_key);
  // Processes the kernel OOM-killed inside the job (v2 memory.events, v1 memory.oom_control).
  std::optional<uint64_t> OomKills(int job_key);
  // Stops / resumes every process of the job. v2: cgroup.freeze. v1: the processes are moved into a
  // matching cgroup of the freezer hierarchy, which is then FROZEN. false means "use SIGSTOP/SIGCONT".
  bool Freeze(int job_key, std::string* err);
  bool Thaw(int job_key, std::string* err);
  // Processes still in the job's cgroup.
  std::vector<pid_t> Pids(int job_key);
  // SIGKILLs whatever is left in the job's cgroup (v2 cgroup.kill when present).
  void KillAll(int job_key);
  // Removes the job's cgroups, or keeps them for a later CreateJob when they can be recycled. Fails (and
  // keeps them) while processes remain: reap or KillAll first.
  bool RemoveJob(int job_key, std::string* err);
  // Emptied job cgroups kept for reuse.
  size_t spare_count() const { return spare_.size(); }

  CgroupVersion version() const { return options_.version; }
  const std::string& build_dir() const { return build_dir_; }
  const std::string& freezer_build_dir() const { return freezer_build_dir_; }  // v1; "" without a freezer

 private:
  struct Job {
    std::string dir;
    std::string freezer_dir;  // v1: made on first Freeze
    KernelFile current;
    KernelFile peak;
    KernelFile oom_events;
    uint64_t leftover_bytes = 0;      // charge earlier occupants left behind (recycled cgroups)
    uint64_t oom_kills_before = 0;    // OOM kills counted before this job
    std::unique_ptr<PreparedLaunch> prepared;  // a child waiting in the cgroup (prepare_launches)
  };

  explicit JobCgroups(JobCgroupsOptions options) : options_(std::move(options)) {}
  Job MakeJob(const std::string& dir) const;
  bool TakeSpare(Job* job);
  size_t ChooseSpare();
  bool CanPrepareAnother() const;
  void Prepare(Job& spare);
  void AddPreparedSpare();
  static void DiscardPrepared(Job& job);
  bool Rearm(Job& job);
  bool CanRecycle(Job& job);
  bool SetUpV2(std::string* err);
  bool SetUpV1(std::string* err);
  bool FreezeV1(Job& job, std::string* err);
  Job* Find(int job_key);

  JobCgroupsOptions options_;
  std::string build_dir_;
  std::string freezer_build_dir_;
  std::map<int, Job> jobs_;
  std::vector<Job> spare_;
  int job_dirs_made_ = 0;
  int extra_spares_made_ = 0;
};

}  // namespace headroom
