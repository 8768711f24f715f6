// JobMeter: per-job peaks from cgroups or /proc sampling, floored by ru_maxrss, plus OOM verdicts.
#include "headroom/memory/job_meter.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

namespace headroom {

const char* PeakSourceName(PeakSource source) {
  switch (source) {
    case PeakSource::kNone:
      return "none";
    case PeakSource::kCgroup:
      return "cgroup";
    case PeakSource::kSampled:
      return "sampled";
    case PeakSource::kRusage:
      return "rusage";
  }
  return "none";
}

JobMeter::JobMeter(const CgroupLayout& layout, JobMeterOptions options)
    : options_(std::move(options)),
      sampler_(options_.root + "/proc", options_.full_rescan_every),
      system_oom_(options_.root) {
  if (!options_.use_cgroups) return;
  // No warning when they cannot be made: a build without cgroup access (not root, no delegation) is ordinary,
  // and ninja users expect silence. -d explain and the summary say why there is no guard, and what fixes it,
  // when memory shaped the build (ArmGuard's why_not).
  cgroups_ = JobCgroups::Create(DefaultJobCgroupsOptions(layout), &cgroups_error_);
  if (!cgroups_) cgroups_fix_ = CgroupAccessFix(layout.memory_version, cgroups_error_);
}

std::string CgroupAccessFix(CgroupVersion version, const std::string& error) {
  if (version == CgroupVersion::kNone) return "";
  if (error.find("systemd-run") != std::string::npos) return "";  // the reason names the fix already
  if (error.find("Read-only file system") != std::string::npos) {
    return "give the container a writable cgroup tree (e.g. docker run --cgroupns=private with a writable "
           "/sys/fs/cgroup)";
  }
  if (version == CgroupVersion::kV2) {
    return geteuid() == 0 ? "run the build in a delegated scope: systemd-run --scope -p Delegate=yes ninja ..."
                          : "run the build in a cgroup delegated to you: "
                            "systemd-run --user --scope -p Delegate=yes ninja ...";
  }
  return geteuid() == 0 ? "make this process's memory cgroup writable"
                        : "run the build as root, or in a memory cgroup this user owns (cgroup v1 has no "
                          "unprivileged delegation through systemd)";
}

JobMeter::JobMeter(std::unique_ptr<JobCgroups> cgroups, JobMeterOptions options)
    : options_(std::move(options)),
      cgroups_(std::move(cgroups)),
      sampler_(options_.root + "/proc", options_.full_rescan_every),
      system_oom_(options_.root) {}

// An aborted job's leader is reaped, but processes of its tree may still be exiting (freeing their
// memory takes a moment); the per-build cgroup can only go once its job cgroups are empty. Processes that
// outlive the wait (a daemon a job started) keep their cgroup, as a finished job's strays do.
JobMeter::~JobMeter() {
  if (!cgroups_ || abandoned_.empty()) return;
  constexpr int kWaitSteps = 100;  // 100 x 10 ms
  for (int step = 0; step < kWaitSteps; ++step) {
    std::string err;
    std::erase_if(abandoned_, [&](int key) { return cgroups_->RemoveJob(key, &err); });
    if (abandoned_.empty()) return;
    usleep(10'000);
  }
}

void JobMeter::Abandon(JobId id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  if (it->second.in_cgroup) abandoned_.push_back(static_cast<int>(id));
  if (!it->second.in_cgroup && it->second.pgid > 0) sampler_.Untrack(it->second.pgid);
  jobs_.erase(it);
}

std::string JobMeter::PrepareJob(JobId id) {
  Job& job = jobs_[id];
  job = Job{};
  // The counter as of the last sample is early enough: it can only make a rise during the job look
  // larger, and it is read only for jobs without a cgroup that die of SIGKILL.
  if (!system_oom_read_) RefreshSystemOomKills();
  job.system_oom_kills_at_start = system_oom_kills_;
  if (!cgroups_) return "";
  std::string err;
  std::string dir = cgroups_->CreateJob(id, &err);
  if (dir.empty()) {
    if (!warned_job_cgroup_) warnings_.push_back(fmt::format("{}; sampling /proc for such jobs", err));
    warned_job_cgroup_ = true;
    return "";
  }
  job.in_cgroup = true;
  return dir;
}

PreparedLaunch* JobMeter::PreparedLaunchFor(JobId id) {
  auto it = jobs_.find(id);
  if (!cgroups_ || it == jobs_.end() || !it->second.in_cgroup) return nullptr;
  return cgroups_->PreparedLaunchFor(static_cast<int>(id));
}

void JobMeter::JobStarted(JobId id, pid_t pgid) {
  Job& job = jobs_[id];
  job.pgid = pgid;
  if (!job.in_cgroup) sampler_.Track(pgid);
}

void JobMeter::RefreshSystemOomKills() {
  system_oom_kills_ = system_oom_.Read();
  system_oom_read_ = true;
}

void JobMeter::Sample() {
  RefreshSystemOomKills();
  bool any_sampled = false;
  for (auto& [id, job] : jobs_) {
    if (job.in_cgroup) {
      job.current_bytes = cgroups_->CurrentBytes(id).value_or(0);
      job.peak_bytes = std::max(job.peak_bytes, job.current_bytes);
    } else if (job.pgid > 0) {
      any_sampled = true;
    }
  }
  if (any_sampled) {
    sampler_.Sample();
    for (auto& [id, job] : jobs_) {
      if (job.in_cgroup || job.pgid <= 0) continue;
      job.current_bytes = sampler_.CurrentBytes(job.pgid);
      job.peak_bytes = std::max(job.peak_bytes, sampler_.PeakBytes(job.pgid));
    }
  }
  RetryPendingRemovals();
}

uint64_t JobMeter::CurrentBytes(JobId id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? 0 : it->second.current_bytes;
}

uint64_t JobMeter::PeakSoFar(JobId id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? 0 : it->second.peak_bytes;
}

bool JobMeter::Freeze(JobId id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || !it->second.in_cgroup) return false;
  std::string err;
  return cgroups_->Freeze(id, &err);
}

bool JobMeter::Thaw(JobId id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || !it->second.in_cgroup) return false;
  std::string err;
  return cgroups_->Thaw(id, &err);
}

JobMemoryResult JobMeter::Finish(const JobExit& exit) {
  JobMemoryResult result;
  auto it = jobs_.find(exit.id);
  Job job = it == jobs_.end() ? Job{} : it->second;
  if (it != jobs_.end()) jobs_.erase(it);

  OomFacts facts;
  facts.killed_by_sigkill = !exit.exited_normally && exit.term_signal == SIGKILL;
  facts.exited_non_zero = exit.exited_normally && exit.exit_code != 0;
  facts.system_oom_kills_at_start = job.system_oom_kills_at_start;
  // /proc/vmstat is long; only a SIGKILL or a failure makes its counter matter (see AttributeOom).
  if (facts.killed_by_sigkill || (facts.exited_non_zero && !job.in_cgroup)) facts.system_oom_kills_at_end = system_oom_.Read();
  result.rusage_peak_bytes = static_cast<uint64_t>(std::max<int64_t>(exit.max_rss_kb, 0)) * 1024;

  if (job.in_cgroup) {
    result.cgroup_peak_bytes = std::max(cgroups_->PeakBytes(exit.id).value_or(0), job.peak_bytes);
    facts.cgroup_oom_kills = cgroups_->OomKills(exit.id);
    std::string err;
    if (!cgroups_->RemoveJob(exit.id, &err)) pending_removals_.push_back(exit.id);
  } else if (job.pgid > 0) {
    result.sampled_peak_bytes = std::max(sampler_.PeakBytes(job.pgid), job.peak_bytes);
    sampler_.Untrack(job.pgid);
  }
  result.oom = AttributeOom(facts);

  // A job cgroup counts exactly what the tree was charged, so its figure stands even when ru_maxrss is a
  // little higher (ru_maxrss also counts shared library pages that were charged to someone else).
  if (result.cgroup_peak_bytes > 0) {
    result.peak_bytes = result.cgroup_peak_bytes;
    result.peak_source = PeakSource::kCgroup;
    return result;
  }
  // Sampling can miss a peak between two samples; then the largest single process is the better floor.
  if (result.sampled_peak_bytes >= result.rusage_peak_bytes && result.sampled_peak_bytes > 0) {
    result.peak_bytes = result.sampled_peak_bytes;
    result.peak_source = PeakSource::kSampled;
  } else if (result.rusage_peak_bytes > 0) {
    result.peak_bytes = result.rusage_peak_bytes;
    result.peak_source = PeakSource::kRusage;
  }
  return result;
}

void JobMeter::RetryPendingRemovals() {
  std::string err;
  std::erase_if(pending_removals_, [&](int key) { return cgroups_->RemoveJob(key, &err); });
}

BuildGuard* JobMeter::ArmGuard(uint64_t limit_bytes, std::string* why_not) {
  if (guard_) return guard_.get();
  if (!cgroups_) {
    *why_not = cgroups_error_.empty() ? "no per-job cgroups" : "no per-job cgroups (" + cgroups_error_ + ")";
    if (!cgroups_fix_.empty()) *why_not += "; to get one, " + cgroups_fix_;
    return nullptr;
  }
  // One attempt per process: a regeneration pass and the build share the per-build cgroup.
  if (!guard_error_.empty()) {
    *why_not = guard_error_;
    return nullptr;
  }
  BuildGuardOptions options;
  options.version = cgroups_->version();
  options.group_dir = cgroups_->guard_dir();
  if (options.group_dir != cgroups_->build_dir()) options.build_dir = cgroups_->build_dir();
  options.v1_freezer_group_dir = cgroups_->freezer_build_dir();
  options.evacuate_dir = cgroups_->EvacuationDir();
  options.v1_freezer_evacuate_dir = cgroups_->v1_freezer_parent_dir();
  options.limit_bytes = limit_bytes;
  guard_ = BuildGuard::Arm(options, &guard_error_);
  if (!guard_) *why_not = guard_error_;
  return guard_.get();
}

std::vector<std::string> JobMeter::TakeWarnings() {
  std::vector<std::string> taken;
  taken.swap(warnings_);
  return taken;
}

}  // namespace headroom
