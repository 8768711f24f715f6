// RemoteController: remote pool slots and the local job cap in front of memory admission, fallback detection.
#include "headroom/admission/remote_controller.h"

#include <algorithm>

#include "headroom/admission/remote_fallback.h"
#include "headroom/graph/graph.h"
#include "headroom/report/timeline.h"
#include "headroom/status/status.h"
#include "headroom/util/clock.h"
#include "headroom/util/byte_size.h"

namespace headroom {

RemoteController::RemoteController(JobController* inner, JobSizes sizes, Status* status, RemoteConfig config)
    : inner_(inner), sizes_(std::move(sizes)), status_(status), config_(std::move(config)), remote_(config_.pool_depth) {}

RemoteController::EdgeExec RemoteController::Classify(const Edge* edge, bool warn) {
  ExecClass exec;
  std::string err;
  if (!ClassifyExecMode(edge->EvaluateCommand(), edge->GetBinding("headroom_exec"), config_.launchers, &exec, &err)) {
    // A bad value must not stop the build; the job runs as local, which is always safe.
    if (warn) {
      status_->Warning("'" + (edge->outputs.empty() ? std::string() : std::string(edge->outputs[0]->path)) + "': " +
                       err + "; running it as local");
    }
    exec = ExecClass{};
  }
  return EdgeExec{exec.mode, &*engines_.insert(exec.engine).first};
}

RemoteController::EdgeExec RemoteController::ClassOf(const Edge* edge) {
  auto it = classes_.find(edge);
  if (it != classes_.end()) return it->second;
  EdgeExec exec = Classify(edge, /*warn=*/true);
  if (exec.mode == ExecMode::kRemote) saw_remote_eligible_ = true;
  classes_.emplace(edge, exec);
  return exec;
}

bool RemoteController::StartsRemote(const Edge* edge, const EdgeExec& exec) const {
  if (exec.mode != ExecMode::kRemote || retry_here_.count(edge)) return false;
  // While the farm is suspect, one remote job at a time probes whether it is back.
  return !farm_suspect_ || remote_.pool().in_use() == 0;
}

bool RemoteController::EstimatesRemote(const Edge* edge) {
  // Until a job of its engine has completed on the farm in this build, a remote-eligible job is estimated as the
  // local compile it becomes if the farm is down from the start: charging the first wave only a residual would
  // admit a whole pool of fallbacks at once.
  if (farm_suspect_ || residuals_.empty() || retry_here_.count(edge)) return false;
  // An edge not ready yet (the priorities estimate every edge up front) is classified without being kept.
  auto it = classes_.find(edge);
  const EdgeExec exec = it != classes_.end() ? it->second : Classify(edge, /*warn=*/false);
  return exec.mode == ExecMode::kRemote && residuals_.count(*exec.engine) != 0;
}

uint64_t RemoteController::Residual(const std::string& engine) const {
  auto it = residuals_.find(engine);
  return it == residuals_.end() ? config_.default_residual_bytes : std::max(it->second, 16 * kMiB);
}

void RemoteController::FillStatus(MemoryStatus* status) const {
  if (!saw_remote_eligible_) return;  // a host list alone (Debian's default names 127.0.0.1) is no farm in use
  status->remote_running = static_cast<int>(remote_.pool().in_use());
  status->remote_slots = static_cast<int>(remote_.pool().depth());
}

bool RemoteController::MayStart(Edge* edge, size_t running) {
  if (pass_refusals_ >= kAdmissionWalkWindow) return false;
  const bool may = MayStartNow(edge, running);
  if (!may) ++pass_refusals_;
  return may;
}

bool RemoteController::MayStartNow(Edge* edge, size_t running) {
  const EdgeExec exec = ClassOf(edge);
  if (StartsRemote(edge, exec)) {
    if (!remote_.MayStartRemote()) return false;
  } else if (saw_remote_eligible_ && local_running_ >= config_.local_cap) {
    return false;
  }
  return inner_->MayStart(edge, running);
}

void RemoteController::JobStarted(Edge* edge, JobId id, ProcessRunner* runner) {
  const EdgeExec exec = ClassOf(edge);
  if (StartsRemote(edge, exec) && remote_.StartedRemote(static_cast<uint64_t>(id), Residual(*exec.engine))) {
    remote_jobs_[id] = RemoteJob{*exec.engine, edge->outputs.empty() ? std::string() : edge->outputs[0]->path};
  } else if (retry_here_.count(edge)) {
    local_jobs_[id] = true;  // counted once already, as a fallback
    ++local_running_;
  } else {
    remote_.StartedLocal();
    local_jobs_[id] = false;
    ++local_running_;
  }
  inner_->JobStarted(edge, id, runner);
}

JobStartOptions RemoteController::PrepareJob(Edge* edge) {
  JobStartOptions options = inner_->PrepareJob(edge);
  auto retry = retry_here_.find(edge);
  if (retry != retry_here_.end()) {
    for (const auto& [name, value] : LocalRetryEnvironment(retry->second)) options.environment.push_back(name + "=" + value);
  }
  return options;
}

void RemoteController::Tick(ProcessRunner* runner) {
  inner_->Tick(runner);  // samples the meter
  if (!sizes_.current) return;
  for (auto& [id, job] : remote_jobs_) {
    if (local_jobs_.count(id)) continue;  // already seen falling back
    uint64_t bytes = sizes_.current(id);
    if (!remote_.Observe(static_cast<uint64_t>(id), bytes)) continue;
    local_jobs_[id] = true;
    ++local_running_;
    NoteFallback(job, FormatBytes(bytes) + " in use, past its residual's threshold");
  }
}

void RemoteController::Mark(const char* kind, const RemoteJob& job, const std::string& detail) {
  if (!timeline_ || !clock_) return;
  timeline_->Mark(TimelineMarker{timeline_->Elapsed(clock_->NowMs()), kind, job.output, detail});
}

void RemoteController::NoteFallback(const RemoteJob& job, const std::string& why) {
  farm_suspect_ = true;
  Mark("remote-fallback", job, (job.engine.empty() ? std::string("remote") : job.engine) + " ran it here: " + why);
  if (warned_fallback_) return;
  warned_fallback_ = true;
  status_->Warning("a " + (job.engine.empty() ? std::string("remote") : job.engine) +
                   " job ran on this machine instead of the farm (its launcher fell back); remote-eligible jobs "
                   "now count as local until one completes remotely");
}

bool RemoteController::RetriesLocally(const Edge* edge, const std::string& engine, const JobExit& exit) {
  if (config_.strict_remote || !exit.exited_normally || !IsInfrastructureExit(engine, exit.exit_code)) return false;
  if (LocalRetryEnvironment(engine).empty()) return false;  // no way to make it compile here
  retry_here_[edge] = engine;
  return true;
}

bool RemoteController::SettleRemoteJob(JobId id, const JobExit& exit, bool retry) {
  auto remote = remote_jobs_.find(id);
  const RemoteJob& job = remote->second;
  bool seen_already = local_jobs_.count(id) != 0;
  uint64_t peak = std::max<uint64_t>(sizes_.peak ? sizes_.peak(id) : 0, static_cast<uint64_t>(exit.max_rss_kb) * 1024);
  bool said_local = LauncherReportedLocalRun(job.engine, exit.output);
  bool ran_remote = false;
  if (retry) {
    // Its launcher gave up on the farm (DISTCC_FALLBACK=0, or every host failed): the source is fine, so the
    // job runs again here under the local cap and memory admission, and counts as a fallback.
    remote_.Finished(static_cast<uint64_t>(id), peak, /*launcher_said_local=*/true);
    NoteFallback(job, job.engine + " exit " + std::to_string(exit.exit_code) + " (a farm failure); retried here");
  } else if (remote_.Finished(static_cast<uint64_t>(id), peak, said_local) == ExecMode::kRemote) {
    ran_remote = true;
    farm_suspect_ = false;  // the farm took a job: it is back
    uint64_t& learned = residuals_[job.engine];
    learned = std::max(learned, peak);
  } else if (!seen_already) {
    NoteFallback(job, said_local ? std::string("its output says so") : FormatBytes(peak) + " at its peak");
  }
  remote_jobs_.erase(remote);
  return ran_remote;
}

bool RemoteController::JobFinished(Edge* edge, JobExit* exit) {
  JobId id = exit->id;
  // Any remote-eligible job may meet the farm's failure, also one counted local while the farm was suspect.
  const EdgeExec exec = ClassOf(edge);
  const std::string& engine = *exec.engine;
  bool retry = exec.mode == ExecMode::kRemote && !retry_here_.count(edge) && RetriesLocally(edge, engine, *exit);
  const bool started_remote = remote_jobs_.count(id) != 0;
  const bool ran_remote = started_remote && SettleRemoteJob(id, *exit, retry);
  if (!started_remote && retry) {
    NoteFallback(RemoteJob{engine, edge->outputs.empty() ? std::string() : edge->outputs[0]->path},
                 engine + " exit " + std::to_string(exit->exit_code) + " (a farm failure); retried here");
  }
  if (local_jobs_.erase(id)) --local_running_;
  // The inner controller learns the job's peak under the mode it ran in (RanRemote) and marks it (RunMode).
  finishing_edge_ = edge;
  finishing_ran_remote_ = ran_remote;
  const bool fell_back = started_remote || retry || retry_here_.count(edge);
  finishing_mode_ = ran_remote  ? "remote (" + engine + ")"
                    : fell_back ? "fell back (" + engine + ")"
                                : std::string("local");
  bool requeued_by_memory = inner_->JobFinished(edge, exit);
  finishing_edge_ = nullptr;
  if (!retry && !requeued_by_memory) {
    retry_here_.erase(edge);  // a retried job ran here; it is not retried again
    classes_.erase(edge);     // done with (an out-of-memory requeue or a retry runs it once more)
  }
  return requeued_by_memory || retry;
}

}  // namespace headroom
