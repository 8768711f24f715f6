// MemoryController's part in the machine-wide build ledger (build_ledger.h, docs/build-ledger.md): it publishes
// what this build's running jobs still owe, counts what the other builds sharing its memory owe, and sizes the
// jobs that run a headroom build of their own from what that nested build publishes. Kept apart from
// memory_controller.cc.
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include "headroom/admission/memory_controller.h"
#include "headroom/graph/graph.h"
#include "headroom/memory/build_ledger.h"
#include "headroom/memory/cgroup_layout.h"
#include "headroom/report/report_format.h"
#include "headroom/util/byte_size.h"

namespace headroom {

namespace {

// Set in every job's environment while this build has a ledger entry: a headroom started by the job (a CMake
// superbuild, pip building a CMake project) takes its budget from this build's and publishes its reservations
// as part of the job, so they are counted once.
constexpr const char* kOuterJobVariable = "HEADROOM_OUTER_JOB";

// "<outer build id>:<job key>"; anything else is ignored (the build then counts as a build of its own).
bool ParseOuterJob(const char* text, std::string* id, int64_t* job) {
  if (text == nullptr) return false;
  std::string_view value = text;
  const size_t colon = value.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == value.size()) return false;
  int64_t key = 0;
  for (char c : value.substr(colon + 1)) {
    if (c < '0' || c > '9' || key > (int64_t{1} << 40)) return false;
    key = key * 10 + (c - '0');
  }
  *id = std::string(value.substr(0, colon));
  *job = key;
  return true;
}

}  // namespace

// Where this build's jobs live, as the ledger's readers compare it with the cgroup that binds their memory:
// the per-build cgroup when jobs get cgroups, else the own memory cgroup (jobs are born there).
std::string MemoryController::JobsCgroupPath() const {
  const CgroupLayout& layout = parts_.probe->layout();
  const std::string dir = parts_.meter->jobs_cgroup_dir();
  return CgroupPathInHierarchy(dir.empty() ? layout.memory_dir : dir, layout.memory_mount_point);
}

// Opened with the guard, before the first admission decision: a build with nothing to do writes no entry.
void MemoryController::OpenLedger() {
  if (parts_.ledger_dir.empty() || ledger_) return;
  ledger_self_.id = ThisBuildId();
  ledger_self_.pid = getpid();
  ledger_self_.uid = getuid();
  ledger_self_.cgroup = JobsCgroupPath();
  ledger_self_.budget_bytes = core_.budget_bytes();
  ParseOuterJob(getenv(kOuterJobVariable), &ledger_self_.parent_id, &ledger_self_.parent_job);
  std::string why_not;
  ledger_ = BuildLedger::Open(parts_.ledger_dir, ledger_self_, &why_not);
  decisions_.ledger = ledger_ ? "" : "no build ledger (" + why_not + "): other headroom builds on this machine "
                                     "cannot see this one's reservations, nor it theirs";
}

// Called on every job start and end and every tick: one pass over the running jobs for what they hold and what they
// still owe (less the jobs whose nested build publishes its own, counted there), and a write only when the
// ledger's coalescing lets one through (BuildLedger::PublishCoalesced; the ticks flush what it held back).
void MemoryController::PublishToLedger() {
  if (!ledger_) return;
  uint64_t owed = 0, used = 0;
  for (const auto& [id, running] : running_) {
    used = SaturatingAdd(used, running.job->rss);
    if (!nested_owed_.count(running.meter_key)) owed = SaturatingAdd(owed, running.job->Owes() + slot_costs_.Charge(id));
  }
  ledger_self_.owed_bytes = owed;
  ledger_self_.used_bytes = used;
  ledger_self_.budget_bytes = core_.budget_bytes();
  ledger_self_.updated_ms = 0;  // now, on the ledger's clock (shared by every build)
  ledger_->PublishCoalesced(ledger_self_);
}

// Re-reads the other builds' entries at most every kLedgerReuseMs. A build counts when its jobs live below the
// cgroup whose limit binds this build's memory (every build, when the machine's memory binds); builds nested in
// this one's jobs are sized through those jobs instead (RunningJobs).
void MemoryController::RefreshOtherBuilds(int64_t now) {
  if (!ledger_ || (others_read_ms_ >= 0 && now - others_read_ms_ < kLedgerReuseMs)) return;
  others_read_ms_ = now;
  const std::string scope = parts_.probe->BindingCgroup();
  others_owed_ = 0;
  others_waiting_ = 0;
  other_builds_ = 0;
  other_builds_busy_ = 0;
  nested_owed_.clear();
  for (const LedgerEntry& entry : ledger_->Others()) {
    // Anyone may name this build as their outer one; only this user's (or root's) builds are believed.
    const bool trusted = entry.uid == ledger_self_.uid || entry.uid == 0;
    if (entry.parent_id == ledger_->id() && entry.parent_job >= 0 && entry.parent_job <= INT_MAX && trusted) {
      auto& owed = nested_owed_[static_cast<int>(entry.parent_job)];
      owed = SaturatingAdd(owed, entry.owed_bytes);
      continue;
    }
    if (!scope.empty() && !CgroupPathWithin(entry.cgroup, scope)) continue;
    others_owed_ = SaturatingAdd(others_owed_, entry.owed_bytes);
    ++other_builds_;
    // The build this one runs in as a job: what it holds includes this build, and what its waiting head waits for
    // may be this very job's end (a job that must run alone), so neither may hold this build back.
    const bool outer = !ledger_self_.parent_id.empty() && entry.id == ledger_self_.parent_id;
    if (!outer) others_waiting_ = SaturatingAdd(others_waiting_, entry.waiting_bytes);
    if (entry.owed_bytes > 0 || (entry.used_bytes > 0 && !outer)) {
      ++other_builds_busy_;
    } else if (!outer && entry.waiting_bytes > 0 && entry.id < ledger_self_.id) {
      // An idle build whose head waits for memory too. Each would start its job over budget beside the other's
      // published wait, and the other would then wait behind one job after another: of the two, the lower id goes
      // first and the other holds back for it (once it runs, it is busy).
      ++other_builds_busy_;
    }
  }
  decisions_.other_builds_most = std::max(decisions_.other_builds_most, other_builds_);
  decisions_.others_owed_most = std::max(decisions_.others_owed_most, others_owed_);
}

// What the other builds' running jobs are still expected to grow by is memory this build may not plan on: the
// reading admission (and an early start's room) sees holds it back. The safety net keeps the real reading,
// since nothing is short until they do grow.
void MemoryController::ShareWithOtherBuilds(MemoryReading* reading, int64_t now) {
  if (!ledger_) return;
  RefreshOtherBuilds(now);
  // A waiting head of another build (nothing of its own runs, or it must run alone) is left room too, so that the
  // builds running jobs do not take every byte their jobs give back before it can (it polls; they never wait).
  const uint64_t held = SaturatingAdd(others_owed_, others_waiting_);
  reading->available_bytes = reading->available_bytes > held ? reading->available_bytes - held : 0;
  reading->other_builds_busy = HoldBackForOthers(now) ? other_builds_busy_ : 0;
  held_for_others_ = reading->other_builds_busy;
}

// With nothing of its own running, a build whose next job does not fit waits while other builds run jobs (they
// will give memory back) rather than start it over budget beside them; for kMaxIdleWaitForOthersMs at most.
bool MemoryController::HoldBackForOthers(int64_t now) {
  if (!running_.empty() || other_builds_busy_ == 0) {
    idle_since_ms_ = -1;
    return false;
  }
  if (idle_since_ms_ < 0) idle_since_ms_ = now;
  if (now - idle_since_ms_ < kMaxIdleWaitForOthersMs) return true;
  if (!explained_idle_limit_) {
    explained_idle_limit_ = true;
    Explain("waited " + FormatDuration(now - idle_since_ms_) + " for other headroom builds to free memory with none "
            "of this build's jobs running: starting the next one anyway");
  }
  return false;
}

int MemoryController::IdleRetryMs() const {
  return running_.empty() && core_.waiting_now() > 0 && held_for_others_ > 0 ? kDefaultSampleIntervalMs : -1;
}

void MemoryController::SizeNestedBuild(const Running& running, RunningJob* job) const {
  if (nested_owed_.empty()) return;
  auto it = nested_owed_.find(running.meter_key);
  if (it == nested_owed_.end()) return;
  // The nested build's own reservations replace the estimate this build started the job with.
  job->predicted_peak = SaturatingAdd(job->rss, it->second);
}

void MemoryController::AddOuterJobVariable(JobStartOptions* options) const {
  if (!ledger_) return;
  options->environment.push_back(std::string(kOuterJobVariable) + "=" + ledger_->id() + ":" +
                                 std::to_string(pending_meter_key_));
}

std::string MemoryController::OtherBuildsNote() const {
  const uint64_t held = SaturatingAdd(others_owed_, others_waiting_);
  if (held == 0) return "";
  return " (" + std::to_string(other_builds_) + (other_builds_ == 1 ? " other headroom build reserves " : " other headroom builds reserve ") +
         FormatBytes(held) + " more)";
}

uint64_t MemoryController::NeedOtherBuildsShouldLeave(const Edge* head) const {
  return running_.empty() || core_.MustRunAlone(head->id) ? core_.EstimateOf(head->id).peak_bytes : 0;
}

void MemoryController::PublishHeadWait(uint64_t need) {
  if (!ledger_ || need == ledger_self_.waiting_bytes) return;
  ledger_self_.waiting_bytes = need;
  PublishToLedger();
}

}  // namespace headroom
