// JobCgroups: per-build and per-job cgroups (v1 memory + freezer, v2), their readings, recycling and removal.
#include "headroom/memory/job_cgroups.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>

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

std::vector<pid_t> ReadPids(const std::string& dir) {
  std::string text, err;
  std::vector<pid_t> pids;
  if (!ReadWholeFile(dir + "/cgroup.procs", &text, &err)) return pids;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (auto pid = ParseSingleNumber(std::string_view(text).substr(start, end - start))) {
      pids.push_back(static_cast<pid_t>(*pid));
    }
    start = end + 1;
  }
  return pids;
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
  options.build_name = fmt::format("headroom-{}", getpid());
  return options;
}

std::unique_ptr<JobCgroups> JobCgroups::Create(const JobCgroupsOptions& options, std::string* err) {
  if (options.version == CgroupVersion::kNone || options.parent_dir.empty()) {
    *err = "no cgroup memory controller";
    return nullptr;
  }
  std::unique_ptr<JobCgroups> cgroups(new JobCgroups(options));
  bool ok = options.version == CgroupVersion::kV2 ? cgroups->SetUpV2(err) : cgroups->SetUpV1(err);
  if (!ok) return nullptr;
  return cgroups;
}

// v2 lets a cgroup hand its memory controller to children only while it has no processes of its own.
bool JobCgroups::SetUpV2(std::string* err) {
  const std::string& parent = options_.parent_dir;
  const std::string enable_memory = "+memory";
  std::string ignored;
  if (!WriteWholeFile(parent + "/cgroup.subtree_control", enable_memory, err)) {
    if (!options_.v2_move_self_to_leaf) return false;
    std::string leaf = parent + "/headroom.self";
    if (!MakeDir(leaf, err) || !WriteWholeFile(leaf + "/cgroup.procs", std::to_string(getpid()), err) ||
        !WriteWholeFile(parent + "/cgroup.subtree_control", enable_memory, err)) {
      return false;
    }
  }
  build_dir_ = parent + "/" + options_.build_name;
  if (!MakeDir(build_dir_, err)) return false;
  if (!WriteWholeFile(build_dir_ + "/cgroup.subtree_control", enable_memory, err)) {
    RemoveDir(build_dir_, &ignored);
    build_dir_.clear();
    return false;
  }
  return true;
}

bool JobCgroups::SetUpV1(std::string* err) {
  build_dir_ = options_.parent_dir + "/" + options_.build_name;
  if (!MakeDir(build_dir_, err)) {
    build_dir_.clear();
    return false;
  }
  // The freezer is optional: without it Freeze() reports false and the caller stops the process group.
  if (!options_.v1_freezer_parent_dir.empty()) {
    std::string freezer_err;
    std::string dir = options_.v1_freezer_parent_dir + "/" + options_.build_name;
    if (MakeDir(dir, &freezer_err)) freezer_build_dir_ = dir;
  }
  return true;
}

JobCgroups::~JobCgroups() {
  std::string ignored;
  for (auto& [key, job] : jobs_) {
    DiscardPrepared(job);
    RemoveDir(job.freezer_dir, &ignored);
    RemoveDir(job.dir, &ignored);
  }
  for (Job& job : spare_) {
    DiscardPrepared(job);
    RemoveDir(job.dir, &ignored);
  }
  RemoveDir(freezer_build_dir_, &ignored);
  RemoveDir(build_dir_, &ignored);
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
    DiscardPrepared(spare);
    std::string ignored;
    RemoveDir(spare.dir, &ignored);
    options_.recycle_max_leftover_bytes = 0;  // this kernel cannot reset peaks: stop recycling
  }
  return false;
}

// Waiting children at most. A prepared spare holds five of headroom's descriptors (the child's socket and output
// pipe, the cgroup's three counter files), which must not crowd out the jobs' own: none below the common 1024 of
// RLIMIT_NOFILE, a thirty-second of it above (1024: 32 children, 160 descriptors), 64 at most.
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

// Starts a child in the spare that waits for its next job; a failure turns preparing off for the build.
void JobCgroups::Prepare(Job& spare) {
  if (!CanPrepareAnother()) return;
  std::string err;
  spare.prepared = PreparedLaunch::Start(spare.dir, &err);
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
    std::vector<pid_t> in_freezer = ReadPids(job.freezer_dir);
    std::set<pid_t> frozen(in_freezer.begin(), in_freezer.end());
    bool moved_any = false;
    for (pid_t pid : ReadPids(job.dir)) {
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
  return job ? ReadPids(job->dir) : std::vector<pid_t>{};
}

void JobCgroups::KillAll(int job_key) {
  Job* job = Find(job_key);
  if (job == nullptr) return;
  std::string ignored;
  if (options_.version == CgroupVersion::kV2 && WriteWholeFile(job->dir + "/cgroup.kill", "1", &ignored)) return;
  for (pid_t pid : ReadPids(job->dir)) kill(pid, SIGKILL);
  // Frozen v1 tasks act on SIGKILL only once thawed.
  if (!job->freezer_dir.empty()) WriteWholeFile(job->freezer_dir + "/freezer.state", "THAWED", &ignored);
}

bool JobCgroups::RemoveJob(int job_key, std::string* err) {
  Job* job = Find(job_key);
  if (job == nullptr) return true;
  DiscardPrepared(*job);  // a child the job was never handed to (it started another way, or not at all)
  if (!ReadPids(job->dir).empty()) {
    *err = fmt::format("cgroup {} still has processes", job->dir);
    return false;
  }
  if (CanRecycle(*job)) {
    Prepare(*job);
    spare_.push_back(std::move(*job));
    jobs_.erase(job_key);
    return true;
  }
  if (!RemoveDir(job->freezer_dir, err) || !RemoveDir(job->dir, err)) return false;
  jobs_.erase(job_key);
  return true;
}

}  // namespace headroom
