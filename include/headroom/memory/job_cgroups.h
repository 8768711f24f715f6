// Per-job cgroups: one cgroup per build (inside the group all builds of one cgroup share) and a child per job,
// so a job's whole process tree is accounted (peak, OOM kills, current usage) and can be frozen. v1 (memory +
// freezer) and v2. Emptied job cgroups that hold almost no charge are recycled for later jobs.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "headroom/exec/prepared_launch.h"
#include "headroom/exec/spawn_resident.h"
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
  // The group every build of parent_dir makes its own group in, so that they can share one guard
  // ("headroom.guard"; "" = the build's group directly under parent_dir).
  std::string shared_group_name;
  // v2 only: when the parent holds processes (so its memory controller cannot be enabled for children),
  // move them all (this one and e.g. the shell that started it) into <parent>/headroom.leaf first, where that
  // is allowed (MayRearrangeV2). Needed in containers whose root cgroup is ours, and in a terminal's scope.
  bool v2_move_self_to_leaf = true;
  // v2: whether systemd delegated `dir` (its trusted.delegate or user.delegate xattr); nullptr reads the xattrs.
  bool (*v2_delegated)(const std::string& dir) = nullptr;
  // Reuse an emptied job cgroup whose leftover charge (page cache, slab) is at most this many bytes;
  // 0 turns recycling off. Its readings are taken relative to what was left, so the bound is also the
  // most a later job's peak can be underestimated by if that leftover is reclaimed while it runs.
  uint64_t recycle_max_leftover_bytes = 4ull << 20;
  // Keep a child waiting in each spare cgroup (PreparedLaunch), joined ahead of time, for the next job to be handed
  // to: on v1, where joining at the job's start waits out an RCU grace period. Needs recycling.
  bool prepare_launches = false;
};

// Options for this process from its discovered layout ("headroom.guard/headroom-<pid>" under the own cgroup).
JobCgroupsOptions DefaultJobCgroupsOptions(const CgroupLayout& layout);

// v2: whether headroom may move the processes of `dir` (not its own: other people's too) into a leaf below it so
// that `dir` can hand its memory controller down; *why_not says why not, with what to do instead. Allowed when this
// process may write the group (root, or a delegated subtree owned by its uid), the group is a domain (never a
// threaded one), and it is no systemd unit (".scope", ".service", ".slice") unless systemd delegated it.
bool MayRearrangeV2(const std::string& dir, bool (*delegated)(const std::string& dir), std::string* why_not);
// The trusted.delegate / user.delegate xattr systemd puts on a cgroup it delegated (Delegate=yes).
bool SystemdDelegated(const std::string& dir);

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
  // Processes still in the job's cgroup (its spawn resident left out).
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
  // The group the guard caps: the shared group when there is one, else the build's own.
  const std::string& guard_dir() const { return guard_dir_.empty() ? build_dir_ : guard_dir_; }
  // Where processes left in the build's groups go when it ends (a daemon a job started, a killed build's orphans):
  // v1 the own cgroup; v2 a leaf of it (a group that hands controllers down may hold no process).
  std::string EvacuationDir() const;
  const std::string& v1_freezer_parent_dir() const { return options_.v1_freezer_parent_dir; }
  // v2: the processes of the own cgroup were moved into a leaf (MayRearrangeV2) so memory could be handed down.
  bool moved_to_leaf() const { return !leaf_dir_.empty(); }
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
    // v1 with prepare_launches: stays in the cgroup while it is this build's, and clones its prepared children there.
    // Declared before `prepared`, which may still refer to it, so it goes after it.
    std::unique_ptr<SpawnResident> resident;
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
  static void EndResident(Job& job);
  static std::vector<pid_t> JobPids(const Job& job);
  bool Rearm(Job& job);
  bool CanRecycle(Job& job);
  bool SetUpV2(std::string* err);
  bool SetUpV1(std::string* err);
  bool EnableMemoryV2(const std::string& dir, std::string* err);
  bool MoveIntoLeafV2(std::string* err);
  bool MakeBuildGroup(std::string* err);
  void RemoveOrEvacuate(const std::string& dir, const std::string& evacuate_to);
  void RemoveLeafIfOnlyOurs();
  bool FreezeV1(Job& job, std::string* err);
  Job* Find(int job_key);

  JobCgroupsOptions options_;
  std::string build_dir_;
  std::string guard_dir_;          // the shared group ("" without one)
  std::string home_dir_;           // where the shared (or build) group is made: parent_dir, or its parent when
                                   // parent_dir is a headroom leaf
  std::string leaf_dir_;           // v2: the leaf this build moved processes into ("" when it moved none)
  std::string freezer_build_dir_;
  std::map<int, Job> jobs_;
  std::vector<Job> spare_;
  int job_dirs_made_ = 0;
  int extra_spares_made_ = 0;
};

}  // namespace headroom
