// JobCgroups: per-build and per-job cgroups (v1 memory + freezer, v2) inside the shared guard group, the v2 move
// into a leaf, their readings, recycling and removal.
#include "headroom/memory/job_cgroups.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "headroom/memory/cgroup_tree.h"
#include "headroom/memory/memory_parsers.h"

namespace headroom {

namespace {

constexpr size_t kMaxSpares = 256;  // emptied job cgroups kept for reuse, at most

bool MakeDir(const std::string& path, std::string* err) {
  if (mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return true;
  *err = fmt::format("cannot create cgroup {}: {}", path, strerror(errno));
  return false;
}

bool RemoveDir(const std::string& path, std::string* err) {
  if (path.empty() || rmdir(path.c_str()) == 0 || errno == ENOENT) return true;
  *err = fmt::format("cannot remove cgroup {}: {}", path, strerror(errno));
  return false;
}

// A reading of a recycled cgroup, less what earlier occupants left there.
uint64_t Above(std::optional<uint64_t> value, uint64_t base) { return value && *value > base ? *value - base : 0; }

std::optional<uint64_t> ReadNumber(KernelFile& file) {
  std::string text, err;
  if (!file.Read(&text, &err)) return std::nullopt;
  return ParseSingleNumber(text);
}

}  // namespace

JobCgroupsOptions DefaultJobCgroupsOptions(const CgroupLayout& layout) {
  JobCgroupsOptions options;
  options.version = layout.memory_version;
  options.parent_dir = layout.memory_dir;
  if (layout.memory_version == CgroupVersion::kV1) {
    options.v1_freezer_parent_dir = layout.v1_freezer_dir;
    // v2 jobs are born in their cgroup (clone3), which costs nothing; v1 ones would wait at every start.
    options.prepare_launches = PreparedLaunch::Supported();
  }
  options.build_name = fmt::format("{}{}", kBuildGroupPrefix, getpid());
  options.shared_group_name = std::string(kSharedGuardGroupName);
  return options;
}

bool SystemdDelegated(const std::string& dir) {
  for (const char* name : {"trusted.delegate", "user.delegate"}) {
    char value[8] = {};
    ssize_t n = getxattr(dir.c_str(), name, value, sizeof value - 1);
    if (n > 0 && value[0] == '1') return true;
  }
  return false;
}

bool MayRearrangeV2(const std::string& dir, bool (*delegated)(const std::string& dir), std::string* why_not) {
  std::string type, err;
  // A threaded group's processes share their threads' placement with its threaded children: never touched.
  if (ReadWholeFile(dir + "/cgroup.type", &type, &err) && type.substr(0, type.find('\n')) != "domain") {
    *why_not = fmt::format("{} is a threaded cgroup, whose processes headroom does not move", dir);
    return false;
  }
  struct stat st;
  const bool writable = access((dir + "/cgroup.procs").c_str(), W_OK) == 0 &&
                        access((dir + "/cgroup.subtree_control").c_str(), W_OK) == 0 && stat(dir.c_str(), &st) == 0 &&
                        (geteuid() == 0 || st.st_uid == geteuid());
  if (!writable) {
    *why_not = fmt::format("{} holds processes (this build's at least, which v2 lets no cgroup keep beside the groups "
                           "it hands memory to) and is not this user's to rearrange", dir);
    return false;
  }
  const std::string name = dir.substr(dir.rfind('/') + 1);
  const bool systemd_unit = name.ends_with(".scope") || name.ends_with(".service") || name.ends_with(".slice");
  if (systemd_unit && !(delegated ? delegated : SystemdDelegated)(dir)) {
    *why_not = fmt::format("{} is a systemd unit that was not delegated, whose processes (this build's among them) "
                           "headroom does not move; run the build in a delegated scope: "
                           "systemd-run {}--scope -p Delegate=yes ninja ...",
                           dir, geteuid() == 0 ? "" : "--user ");
    return false;
  }
  return true;
}

std::unique_ptr<JobCgroups> JobCgroups::Create(const JobCgroupsOptions& options, std::string* err) {
  if (options.version == CgroupVersion::kNone || options.parent_dir.empty()) {
    *err = "no cgroup memory controller";
    return nullptr;
  }
  std::unique_ptr<JobCgroups> cgroups(new JobCgroups(options));
  cgroups->home_dir_ = options.parent_dir;
  bool ok = options.version == CgroupVersion::kV2 ? cgroups->SetUpV2(err) : cgroups->SetUpV1(err);
  if (!ok) return nullptr;
  return cgroups;
}

bool JobCgroups::EnableMemoryV2(const std::string& dir, std::string* err) {
  return WriteWholeFile(dir + "/cgroup.subtree_control", "+memory", err);
}

// The own cgroup's processes (this one, the shell that started it, whatever else lives there) move into a leaf,
// so that the own cgroup holds none and may hand its memory controller down, as container inits do. Repeated
// until the controller can be enabled: a process forking meanwhile leaves a child behind for the next pass.
bool JobCgroups::MoveIntoLeafV2(std::string* err) {
  if (!MayRearrangeV2(home_dir_, options_.v2_delegated, err)) return false;
  const std::string leaf = home_dir_ + "/" + std::string(kLeafGroupName);
  if (!MakeDir(leaf, err)) return false;
  leaf_dir_ = leaf;
  constexpr int kMaxPasses = 100;
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    for (pid_t pid : CgroupPids(home_dir_)) {
      std::string ignored;  // one that exited meanwhile is no longer there to move
      WriteWholeFile(leaf + "/cgroup.procs", std::to_string(pid), &ignored);
    }
    if (EnableMemoryV2(home_dir_, err)) return true;
  }
  return false;
}

// v2 lets a cgroup hand its memory controller to children only while it has no processes of its own.
bool JobCgroups::SetUpV2(std::string* err) {
  // Inside a leaf a build (this one's predecessor or a sibling) made: the groups go beside it, in the parent
  // that already hands memory down, so that every build started from the leaf shares the same guard group.
  const std::string name = home_dir_.substr(home_dir_.rfind('/') + 1);
  if (name == kLeafGroupName || name == kLegacyLeafGroupName) {
    const std::string parent = home_dir_.substr(0, home_dir_.rfind('/'));
    std::string controls, ignored;
    if (ReadWholeFile(parent + "/cgroup.subtree_control", &controls, &ignored) &&
        controls.find("memory") != std::string::npos) {
      home_dir_ = parent;
    }
  }
  std::string first_err;
  if (EnableMemoryV2(home_dir_, &first_err)) {
    // Handed down already, or this build is alone in a group with no process (a delegated scope's child).
  } else if (first_err.find(strerror(EBUSY)) == std::string::npos) {
    *err = first_err;  // not "it holds processes" (EBUSY): no access, a read-only mount; moving would not help
    return false;
  } else if (!options_.v2_move_self_to_leaf || !MoveIntoLeafV2(err)) {
    if (err->empty()) *err = first_err;
    return false;
  }
  return MakeBuildGroup(err);
}

bool JobCgroups::SetUpV1(std::string* err) {
  if (!MakeBuildGroup(err)) return false;
  // The freezer is optional: without it Freeze() reports false and the caller stops the process group.
  if (!options_.v1_freezer_parent_dir.empty()) {
    SweepStaleBuildGroups(options_.v1_freezer_parent_dir);
    std::string freezer_err;
    std::string dir = options_.v1_freezer_parent_dir + "/" + options_.build_name;
    if (MakeDir(dir, &freezer_err)) freezer_build_dir_ = dir;
  }
  return true;
}

// <home>/headroom.guard/headroom-<pid>. The last build to leave removes the shared group, so it can vanish between
// this build's mkdir of it and of its own group inside: then both are made again (a few times at most).
bool JobCgroups::MakeBuildGroup(std::string* err) {
  const bool v2 = options_.version == CgroupVersion::kV2;
  SweepStaleBuildGroups(home_dir_);  // groups of builds that died before they could remove them (SIGKILL)
  if (options_.shared_group_name.empty()) {
    build_dir_ = home_dir_ + "/" + options_.build_name;
    if (!MakeDir(build_dir_, err) || (v2 && !EnableMemoryV2(build_dir_, err))) {
      std::string ignored;
      RemoveDir(build_dir_, &ignored);
      build_dir_.clear();
      return false;
    }
    return true;
  }
  guard_dir_ = home_dir_ + "/" + options_.shared_group_name;
  constexpr int kMaxTries = 10;
  for (int attempt = 0; attempt < kMaxTries; ++attempt) {
    err->clear();
    if (!MakeDir(guard_dir_, err) || (v2 && !EnableMemoryV2(guard_dir_, err))) {
      if (access(guard_dir_.c_str(), F_OK) != 0) continue;  // removed by the last build leaving it
      break;
    }
    SweepStaleBuildGroups(guard_dir_);
    build_dir_ = guard_dir_ + "/" + options_.build_name;
    if (!MakeDir(build_dir_, err)) {
      build_dir_.clear();
      if (access(guard_dir_.c_str(), F_OK) != 0) continue;
      break;
    }
    if (v2 && !EnableMemoryV2(build_dir_, err)) {
      std::string ignored;
      RemoveDir(build_dir_, &ignored);
      build_dir_.clear();
      break;
    }
    return true;
  }
  std::string ignored;
  RemoveDir(guard_dir_, &ignored);  // only when no other build is inside
  guard_dir_.clear();
  if (err->empty()) *err = "the shared guard group kept disappearing";
  return false;
}

std::string JobCgroups::EvacuationDir() const {
  if (options_.version == CgroupVersion::kV1) return home_dir_;
  return home_dir_ + "/" + std::string(kLeafGroupName);
}

// A group that still holds processes (a daemon a job started, an abort's last exiting processes) is emptied into
// the evacuation group first, so that no group of this build stays behind, least of all inside a capped shared
// group whose other builds would otherwise pay for it.
void JobCgroups::RemoveOrEvacuate(const std::string& dir, const std::string& evacuate_to) {
  if (dir.empty() || RemoveCgroupTree(dir)) return;
  std::string ignored;
  if (options_.version == CgroupVersion::kV2) MakeDir(evacuate_to, &ignored);
  MoveCgroupTreeProcesses(dir, evacuate_to, &ignored);
  RemoveCgroupTree(dir);
}

// v2: a leaf that holds only this process (the processes moved with it, by this build or another, have ended),
// beside which nothing is left, is undone so that the cgroup is left as it was found (UndoUnusedLeafV2). One that
// still holds other processes stays: it is now their cgroup.
void JobCgroups::RemoveLeafIfOnlyOurs() {
  if (options_.version != CgroupVersion::kV2) return;
  UndoUnusedLeafV2(home_dir_);
}

JobCgroups::~JobCgroups() {
  std::string ignored;
  const std::string evacuate_to = EvacuationDir();
  for (auto& [key, job] : jobs_) {
    EndResident(job);
    RemoveOrEvacuate(job.freezer_dir, options_.v1_freezer_parent_dir);
    RemoveOrEvacuate(job.dir, evacuate_to);
  }
  for (Job& job : spare_) {
    EndResident(job);
    RemoveOrEvacuate(job.dir, evacuate_to);
  }
  RemoveOrEvacuate(freezer_build_dir_, options_.v1_freezer_parent_dir);
  RemoveOrEvacuate(build_dir_, evacuate_to);
  // The last build out removes the shared group (and its cap with it); while other builds' groups are inside,
  // rmdir fails, which is how a build knows it is not the last.
  if (!guard_dir_.empty()) RemoveDir(guard_dir_, &ignored);
  RemoveLeafIfOnlyOurs();
}

JobCgroups::Job* JobCgroups::Find(int job_key) {
  auto it = jobs_.find(job_key);
  return it == jobs_.end() ? nullptr : &it->second;
}

JobCgroups::Job JobCgroups::MakeJob(const std::string& dir) const {
  bool v2 = options_.version == CgroupVersion::kV2;
  Job job;
  job.dir = dir;
  job.current = KernelFile(dir + (v2 ? "/memory.current" : "/memory.usage_in_bytes"));
  job.peak = KernelFile(dir + (v2 ? "/memory.peak" : "/memory.max_usage_in_bytes"));
  job.oom_events = KernelFile(dir + (v2 ? "/memory.events" : "/memory.oom_control"));
  return job;
}

std::string JobCgroups::CreateJob(int job_key, std::string* err) {
  Job job;
  if (!TakeSpare(&job)) {
    // Names are never reused within a build, so a cgroup that could not be removed never gets a second job.
    std::string dir = fmt::format("{}/job-{}", build_dir_, ++job_dirs_made_);
    if (!MakeDir(dir, err)) return "";
    job = MakeJob(dir);
  }
  // No child ready for this job: jobs start faster than spares come back, so keep one more spare from now on.
  if (options_.prepare_launches && !(job.prepared && job.prepared->Poll() == PreparedLaunch::State::kReady)) {
    AddPreparedSpare();
  }
  std::string dir = job.dir;
  jobs_[job_key] = std::move(job);
  return dir;
}

PreparedLaunch* JobCgroups::PreparedLaunchFor(int job_key) {
  Job* job = Find(job_key);
  return job ? job->prepared.get() : nullptr;
}

// The oldest spare whose child is ready, else the oldest (its child has been joining longest).
size_t JobCgroups::ChooseSpare() {
  for (size_t i = 0; i < spare_.size(); ++i) {
    if (spare_[i].prepared && spare_[i].prepared->Poll() == PreparedLaunch::State::kReady) return i;
  }
  return 0;
}

// A spare that cannot be re-armed (a kernel whose memory.peak cannot be reset) is removed instead.
bool JobCgroups::TakeSpare(Job* job) {
  while (!spare_.empty()) {
    auto chosen = spare_.begin() + static_cast<std::ptrdiff_t>(ChooseSpare());
    Job spare = std::move(*chosen);
    spare_.erase(chosen);
    if (spare.prepared && spare.prepared->Poll() == PreparedLaunch::State::kFailed) {
      // It could not join: this cgroup cannot be joined ahead here; the job joins at its start as before.
      DiscardPrepared(spare);
      options_.prepare_launches = false;
    }
    if (Rearm(spare)) {
      *job = std::move(spare);
      return true;
    }
    EndResident(spare);
    std::string ignored;
    RemoveDir(spare.dir, &ignored);
    options_.recycle_max_leftover_bytes = 0;  // this kernel cannot reset peaks: stop recycling
  }
  return false;
}

// Waiting children at most. A prepared spare holds four of headroom's descriptors (the read end of the child's output
// pipe, the cgroup's three counter files), which must not crowd out the jobs' own: none below the common 1024 of
// RLIMIT_NOFILE, a thirty-second of it above (1024: 32 children, 128 descriptors), 64 at most.
static size_t MaxPreparedChildren() {
  static const size_t most = [] {
    constexpr size_t kMost = 64;
    constexpr rlim_t kSmallLimit = 1024;
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return kMost;
    if (limit.rlim_cur < kSmallLimit) return size_t{0};
    return std::min<size_t>(kMost, limit.rlim_cur / 32);
  }();
  return most;
}

bool JobCgroups::CanPrepareAnother() const {
  if (!options_.prepare_launches) return false;
  const auto waiting = std::count_if(spare_.begin(), spare_.end(), [](const Job& job) { return job.prepared != nullptr; });
  return static_cast<size_t>(waiting) < MaxPreparedChildren();
}

// Starts a child in the spare that waits for its next job; a failure turns preparing off for the build. The cgroup's
// resident clones it there: only a resident's start joins the cgroup, once for all the jobs it will hold.
void JobCgroups::Prepare(Job& spare) {
  if (!CanPrepareAnother()) return;
  std::string err;
  if (spare.resident && !spare.resident->Alive()) EndResident(spare);  // killed by someone: a new one joins
  if (!spare.resident) spare.resident = SpawnResident::Start(spare.dir, &err);
  spare.prepared = PreparedLaunch::Start(spare.dir, spare.resident.get(), &err);
  if (!spare.prepared) options_.prepare_launches = false;
}

// A fresh spare with a child joining it. At most kMaxExtraSpares per build: the burst of starts at the beginning
// of a build, and jobs shorter than a grace period, need a few more spares than the jobs that run at once.
void JobCgroups::AddPreparedSpare() {
  constexpr int kMaxExtraSpares = 16;
  // Checked before the directory is made: a spare made only to be removed again (no child allowed) is work for nothing.
  if (extra_spares_made_ >= kMaxExtraSpares || spare_.size() >= kMaxSpares || !CanPrepareAnother()) return;
  ++extra_spares_made_;
  std::string err;
  std::string dir = fmt::format("{}/job-{}", build_dir_, ++job_dirs_made_);
  if (!MakeDir(dir, &err)) return;
  Job spare = MakeJob(dir);
  Prepare(spare);
  if (!spare.prepared) {
    RemoveDir(dir, &err);
    return;
  }
  spare_.push_back(std::move(spare));
}

void JobCgroups::DiscardPrepared(Job& job) {
  if (job.prepared) job.prepared->Discard();
  job.prepared.reset();
}

// Kills and reaps the cgroup's resident, after the child it may still be cloning: before the cgroup can be removed.
void JobCgroups::EndResident(Job& job) {
  DiscardPrepared(job);
  job.resident.reset();
}

// The job's processes: the cgroup's, but its resident, which is no part of any job.
std::vector<pid_t> JobCgroups::JobPids(const Job& job) {
  std::vector<pid_t> pids = CgroupPids(job.dir);
  if (job.resident) std::erase(pids, job.resident->pid());
  return pids;
}

// Resets the high-water mark to the current charge (v1: writing 0; v2 >= 6.12: any write, per
// descriptor) and notes what is already there, so readings cover the new job only.
bool JobCgroups::Rearm(Job& job) {
  std::string err;
  if (!job.peak.Write("0", &err)) return false;
  job.leftover_bytes = ReadNumber(job.current).value_or(0);
  std::string text;
  job.oom_kills_before = job.oom_events.Read(&text, &err) ? ParseKeyedValue(text, "oom_kill").value_or(0) : 0;
  return true;
}

bool JobCgroups::CanRecycle(Job& job) {
  if (options_.recycle_max_leftover_bytes == 0 || !job.freezer_dir.empty() || spare_.size() >= kMaxSpares) {
    return false;
  }
  std::optional<uint64_t> charge = ReadNumber(job.current);
  return charge && *charge <= options_.recycle_max_leftover_bytes;
}

std::optional<uint64_t> JobCgroups::CurrentBytes(int job_key) {
  Job* job = Find(job_key);
  if (job == nullptr) return std::nullopt;
  std::optional<uint64_t> charge = ReadNumber(job->current);
  if (!charge) return std::nullopt;
  return Above(charge, job->leftover_bytes);
}

std::optional<uint64_t> JobCgroups::PeakBytes(int job_key) {
  Job* job = Find(job_key);
  if (job == nullptr) return std::nullopt;
  std::optional<uint64_t> peak = ReadNumber(job->peak);
  if (!peak) return std::nullopt;
  return Above(peak, job->leftover_bytes);
}

std::optional<uint64_t> JobCgroups::OomKills(int job_key) {
  Job* job = Find(job_key);
  if (job == nullptr) return std::nullopt;
  std::string text, err;
  if (!job->oom_events.Read(&text, &err)) return std::nullopt;
  std::optional<uint64_t> kills = ParseKeyedValue(text, "oom_kill");
  if (!kills) return std::nullopt;
  return Above(kills, job->oom_kills_before);
}

bool JobCgroups::Freeze(int job_key, std::string* err) {
  Job* job = Find(job_key);
  if (job == nullptr) {
    *err = fmt::format("no cgroup for job {}", job_key);
    return false;
  }
  if (options_.version == CgroupVersion::kV2) return WriteWholeFile(job->dir + "/cgroup.freeze", "1", err);
  return FreezeV1(*job, err);
}

// The runner can put a job into one cgroup only (the memory one), so the job's processes join the freezer
// cgroup here. It is set FROZEN first: every task moved in afterwards freezes on arrival and can no longer
// fork, so repeating the move until a pass finds no newcomer catches every process of the tree.
bool JobCgroups::FreezeV1(Job& job, std::string* err) {
  if (freezer_build_dir_.empty()) {
    *err = "no v1 freezer hierarchy";
    return false;
  }
  if (job.freezer_dir.empty()) {
    std::string dir = job.dir.substr(job.dir.rfind('/'));
    if (!MakeDir(freezer_build_dir_ + dir, err)) return false;
    job.freezer_dir = freezer_build_dir_ + dir;
  }
  if (!WriteWholeFile(job.freezer_dir + "/freezer.state", "FROZEN", err)) return false;
  constexpr int kMaxPasses = 1000;
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    std::vector<pid_t> in_freezer = CgroupPids(job.freezer_dir);
    std::set<pid_t> frozen(in_freezer.begin(), in_freezer.end());
    bool moved_any = false;
    for (pid_t pid : JobPids(job)) {
      if (frozen.count(pid) != 0) continue;
      std::string ignored;  // a task that exited meanwhile cannot be moved; that is fine
      if (WriteWholeFile(job.freezer_dir + "/cgroup.procs", std::to_string(pid), &ignored)) moved_any = true;
    }
    if (!moved_any) return true;
  }
  // Give the freezer back: the caller falls back to SIGSTOP and later resumes with SIGCONT only, so a freezer
  // left FROZEN here would hold whatever was moved into it for ever (a task that was exiting can be "moved"
  // without ever showing up, which is how a pass can keep finding a newcomer).
  std::string ignored;
  WriteWholeFile(job.freezer_dir + "/freezer.state", "THAWED", &ignored);
  *err = "job kept forking faster than it could be frozen";
  return false;
}

bool JobCgroups::Thaw(int job_key, std::string* err) {
  Job* job = Find(job_key);
  if (job == nullptr) {
    *err = fmt::format("no cgroup for job {}", job_key);
    return false;
  }
  if (options_.version == CgroupVersion::kV2) return WriteWholeFile(job->dir + "/cgroup.freeze", "0", err);
  if (job->freezer_dir.empty()) {
    *err = "job was not frozen through the freezer cgroup";
    return false;
  }
  return WriteWholeFile(job->freezer_dir + "/freezer.state", "THAWED", err);
}

std::vector<pid_t> JobCgroups::Pids(int job_key) {
  Job* job = Find(job_key);
  return job ? JobPids(*job) : std::vector<pid_t>{};
}

void JobCgroups::KillAll(int job_key) {
  Job* job = Find(job_key);
  if (job == nullptr) return;
  std::string ignored;
  if (options_.version == CgroupVersion::kV2 && WriteWholeFile(job->dir + "/cgroup.kill", "1", &ignored)) return;
  // v1 has no cgroup.kill: every process of the job's subtree, so a headroom nested in the job (with its own
  // groups below the job's) goes with its jobs.
  const pid_t resident = job->resident ? job->resident->pid() : -1;
  for (pid_t pid : CgroupTreePids(job->dir)) {
    if (pid != resident) kill(pid, SIGKILL);
  }
  // Frozen v1 tasks act on SIGKILL only once thawed.
  if (!job->freezer_dir.empty()) WriteWholeFile(job->freezer_dir + "/freezer.state", "THAWED", &ignored);
}

bool JobCgroups::RemoveJob(int job_key, std::string* err) {
  Job* job = Find(job_key);
  if (job == nullptr) return true;
  DiscardPrepared(*job);  // a child the job was never handed to (it started another way, or not at all)
  // Listed only when its link count says it has child groups: a listing is one of the larger costs of a job's end.
  const std::vector<std::string> children =
      MayHaveChildCgroups(job->dir) ? CgroupChildren(job->dir) : std::vector<std::string>{};
  bool has_processes = !JobPids(*job).empty();
  for (size_t i = 0; i < children.size() && !has_processes; ++i) has_processes = !CgroupTreePids(children[i]).empty();
  if (has_processes) {
    *err = fmt::format("cgroup {} still has processes", job->dir);
    return false;
  }
  // A job that made groups of its own (a nested headroom's leaf, guard and build groups) is not reused.
  if (!children.empty()) {
    EndResident(*job);
    if (!RemoveDir(job->freezer_dir, err)) return false;
    if (!RemoveCgroupTree(job->dir)) {
      *err = fmt::format("cannot remove cgroup {} and the groups below it", job->dir);
      return false;
    }
    jobs_.erase(job_key);
    return true;
  }
  if (CanRecycle(*job)) {
    Prepare(*job);
    spare_.push_back(std::move(*job));
    jobs_.erase(job_key);
    return true;
  }
  EndResident(*job);
  if (!RemoveDir(job->freezer_dir, err) || !RemoveDir(job->dir, err)) return false;
  jobs_.erase(job_key);
  return true;
}

}  // namespace headroom
