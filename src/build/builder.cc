// The build loop: admission (-j, -l, pools, JobController), job start/finish, restat, logs,
// deps extraction, and cleanup of interrupted jobs, following ninja 1.13.2.
#include "headroom/build/builder.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <climits>
#include <limits>

#include "headroom/build/deadline.h"
#include "headroom/exec/jobserver.h"
#include "headroom/exec/jobserver_server.h"
#include "headroom/logs/build_log.h"
#include "headroom/logs/deps_log.h"
#include "headroom/logs/depfile_parser.h"
#include "headroom/logs/show_includes_parser.h"
#include "headroom/scan/content_hashes.h"
#include "headroom/status/status.h"
#include "headroom/util/clock.h"
#include "headroom/util/disk.h"
#include "headroom/util/duration.h"
#include "headroom/util/path.h"
#include "headroom/util/metrics.h"

namespace headroom {

namespace {

// A dry run finishes its started edges this many at a time (see Builder::Build).
constexpr size_t kDryRunExitChunk = 1024;
// How often the jobserver's channels are read back while slots are offered or held.
constexpr int kSlotPollMs = 50;

bool IsInterruptExit(const JobExit& exit) {
  if (exit.exited_normally) return exit.exit_code == 130;
  return exit.term_signal == SIGINT || exit.term_signal == SIGTERM || exit.term_signal == SIGHUP;
}

}  // namespace

Builder::Builder(State* state, const BuildConfig& config, BuildLog* build_log, DepsLog* deps_log, DiskInterface* disk,
                 Status* status, const Clock* clock, Explanations* explanations)
    : state_(state),
      config_(config),
      build_log_(build_log),
      deps_log_(deps_log),
      disk_(disk),
      status_(status),
      clock_(clock),
      scan_(state, build_log, deps_log, disk, explanations) {
  build_start_ms_ = clock_->NowMs();
  plan_.set_dyndep_loader([this](Node* node, std::string* err) { return LoadDyndeps(node, err); });
  // The status line's total (%t) and ETA follow the plan as edges enter and leave it (restat,
  // dyndep); like ninja 1.13 the count is never reset, so a regeneration pass stays counted.
  plan_.set_plan_size_observer([this](const Edge* edge, bool added) {
    if (added)
      status_->EdgeAddedToPlan(edge, PreviousDurationMs(edge));
    else
      status_->EdgeRemovedFromPlan(edge);
  });
}

int64_t Builder::PreviousDurationMs(const Edge* edge) const {
  if (!build_log_) return -1;
  // The first output with a log entry tells how long this edge took last time.
  for (const Node* output : edge->outputs) {
    if (const BuildLogEntry* entry = build_log_->LookupByOutput(output->path))
      return entry->end_time - entry->start_time;
  }
  return -1;
}

Builder::~Builder() { Cleanup(); }

int64_t Builder::NowMs() const { return clock_->NowMs() - build_start_ms_; }

Node* Builder::AddTarget(const std::string& name, std::string* err) {
  Node* node = state_->LookupNode(name);
  if (!node) {
    *err = "unknown target: '" + name + "'";
    return nullptr;
  }
  if (!AddTarget(node, err)) return nullptr;
  return node;
}

bool Builder::AddTarget(Node* target, std::string* err) {
  std::vector<Node*> validation_nodes;
  if (!scan_.RecomputeDirty(target, &validation_nodes, err)) return false;

  Edge* in_edge = target->in_edge;
  if (!in_edge || !in_edge->outputs_ready) {
    if (!plan_.AddTarget(target, err)) return false;
  }
  // Validations are built too, but never block the target that asked for them.
  for (Node* validation : validation_nodes) {
    if (Edge* validation_edge = validation->in_edge) {
      if (!validation_edge->outputs_ready && !plan_.AddTarget(validation, err)) return false;
    }
  }
  return true;
}

bool Builder::CanStartMore(size_t running) const {
  // A dry run "finishes" jobs as soon as they start; like ninja it starts everything ready.
  if (config_.dry_run) return true;
  // With a jobserver, make's pool replaces the -j cap (checked last, as taking a token is a side effect).
  int64_t capacity = jobserver_ ? std::numeric_limits<int64_t>::max()
                                : static_cast<int64_t>(config_.parallelism) - static_cast<int64_t>(running);
  if (config_.max_load_average > 0.0) {
    double load = -0.0;
    if (getloadavg(&load, 1) == 1) {
      int64_t load_capacity = static_cast<int64_t>(config_.max_load_average - load);
      capacity = std::min(capacity, load_capacity);
    }
  }
  // One job may always run, whatever the caps say (for a jobserver: its implicit slot).
  if (running == 0) return true;
  if (capacity <= 0) return false;
  return !jobserver_ || running < jobserver_->slots() || jobserver_->TryAcquire();
}

size_t Builder::ExtraSlots() const { return server_ ? server_->ledger().extra_slots() : 0; }

int Builder::WaitTimeoutMs() const {
  int timeout = controller_->TickIntervalMs();
  // A slot offered or held may be taken or given back at any moment, and neither wakes the loop.
  if (ExtraSlots() != 0) timeout = timeout < 0 ? kSlotPollMs : std::min(timeout, kSlotPollMs);
  // The deadline (and the end of its grace) must wake the loop even while every job keeps running.
  if (deadline_) {
    const int until = static_cast<int>(std::min<int64_t>(deadline_->MsUntilNextCheck(clock_->NowMs()), INT_MAX));
    timeout = timeout < 0 ? until : std::min(timeout, until);
  }
  return timeout;
}

Edge* Builder::FindReadyEdge(size_t running) {
  if (!config_.dry_run) controller_->BeginPass();
  auto allowed = [&](Edge* candidate) {
    return candidate->is_phony() || config_.dry_run || controller_->MayStart(candidate, running);
  };
  if (!deadline_ || config_.dry_run) return plan_.FindWork(allowed);
  const int64_t now = clock_->NowMs();
  // As the deadline nears, work that still completes its chain to the targets goes first; then anything
  // predicted to end before the deadline.
  Edge* edge = plan_.FindWork([&](Edge* c) { return deadline_->ChainFits(c, now) && allowed(c); });
  if (edge) return edge;
  controller_->BeginPass();
  return plan_.FindWork([&](Edge* c) { return deadline_->MayStart(c, now) && allowed(c); });
}

bool Builder::DeadlineStopsBuild() {
  if (!deadline_ || config_.dry_run) return false;
  const int64_t now = clock_->NowMs();
  if (!deadline_->Reached(now)) return false;
  if (deadline_->GraceOver(now)) return true;
  return std::none_of(running_.begin(), running_.end(), [&](const auto& job) {
    return deadline_->MayFinishInGrace(job.second.edge, build_start_ms_ + job.second.start_time_ms);
  });
}

bool Builder::NothingReadyFitsDeadline() {
  // Edges held back for another reason (memory other builds still use) may start later; these never will.
  const int64_t now = clock_->NowMs();
  const auto& ready = plan_.ready();
  return !ready.empty() &&
         std::none_of(ready.begin(), ready.end(), [&](Edge* edge) { return deadline_->MayStart(edge, now); });
}

BuildResult Builder::StoppedAtDeadline(std::string* err) {
  const int64_t past = clock_->NowMs() - deadline_->at_ms();
  // Under a second before it counts as reached: "deadline in 0.0s" says nothing more.
  const std::string when = past > -1000 ? "deadline reached (" + DurationText(std::max<int64_t>(past, 0)) + " past it)"
                                     : "deadline in " + DurationText(-past) + ": no remaining job fits before it";
  *err = when + ", " + std::to_string(edges_done_) + "/" + std::to_string(plan_.command_edge_count()) +
         " jobs done; run again to resume";
  // A job that failed (-k) will not pass by running again: its exit status stays the build's.
  if (failed_jobs_ > 0) {
    *err += " (" + std::to_string(failed_jobs_) + " failed)";
    return BuildResult::kFailed;
  }
  failure_exit_code_ = kDeadlineExitCode;
  return BuildResult::kStoppedAtDeadline;
}

void Builder::ReconcileSlots() {
  if (!server_ || server_->ledger().empty()) return;
  server_->ledger().Reconcile([this](JobId id, size_t held) {
    auto it = running_.find(id);
    if (it != running_.end()) controller_->SlotsChanged(it->second.edge, id, held);
  });
}

void Builder::OfferSlots(size_t running) {
  if (!server_ || server_->ledger().empty() || config_.dry_run) return;
  SlotLedger& ledger = server_->ledger();
  ledger.Offer(std::numeric_limits<size_t>::max(), [&](JobId id) {
    auto it = running_.find(id);
    if (it == running_.end()) return false;
    // The job's own process is its implicit slot; each offer is one more process against -j.
    if (!CanStartMore(running + ledger.extra_slots())) return false;
    if (!controller_->MayGrantSlot(it->second.edge, id)) return false;
    controller_->SlotsChanged(it->second.edge, id, ledger.held(id) + 1);
    return true;
  });
}

BuildResult Builder::Build(std::string* err) {
  if (deadline_ && !config_.dry_run) {
    // A build that cannot end by the deadline completes its targets one at a time (deadline.h).
    std::vector<const Edge*> wanted;
    plan_.AnyWantedCommandEdge([&wanted](const Edge* edge) { return wanted.push_back(edge), false; });
    plan_.PrepareQueue(deadline_->TargetsFirst(wanted, edge_cost_, config_.parallelism, clock_->NowMs()));
  } else {
    plan_.PrepareQueue(edge_cost_);
  }
  int pending_commands = 0;
  int failures_allowed = config_.failures_allowed;
  status_->BuildStarted();

  auto stop = [&](BuildResult result) {
    // The controller hears first, so it can release jobs it holds (frozen, or waiting at the build
    // guard's memory limit) before Cleanup signals them and waits for them to exit.
    controller_->BuildEnded();
    Cleanup();
    status_->BuildFinished();
    return result;
  };

  while (plan_.more_to_do()) {
    // Offers not taken since the last pass come back first, so they never keep a ready edge waiting.
    ReconcileSlots();
    if (failures_allowed) {
      for (;;) {
        size_t running = static_cast<size_t>(pending_commands);
        if (!CanStartMore(running + ExtraSlots())) break;
        Edge* edge = FindReadyEdge(running);
        if (!edge) break;
        if (edge->GetBindingBool("generator") && build_log_) {
          // The generator may run `ninja -t restat` on our log; let it see a closed file.
          build_log_->Close();
        }
        if (!StartEdge(edge, err)) return stop(BuildResult::kFailed);
        if (edge->is_phony()) {
          if (!plan_.EdgeFinished(edge, Plan::EdgeResult::kSucceeded, err)) return stop(BuildResult::kFailed);
        } else {
          ++pending_commands;
        }
      }
      // What -j has left once no ready edge can start goes to running jobs as extra slots.
      OfferSlots(static_cast<size_t>(pending_commands));
      // A token taken for a job that did not start (nothing ready, or held back) goes back now.
      if (jobserver_) jobserver_->ReleaseTo(static_cast<size_t>(pending_commands) + ExtraSlots());
      if (pending_commands == 0 && !plan_.more_to_do()) break;
    }

    if (pending_commands) {
      std::vector<JobExit> finished;
      std::vector<JobId> dry_run_ids;
      size_t dry_run_next = 0;
      if (config_.dry_run) {
        dry_run_ids.swap(dry_run_finished_);
      } else {
        auto wait = runner_->Wait(WaitTimeoutMs(), &finished);
        if (wait == ProcessRunner::WaitResult::kInterrupted) {
          *err = "interrupted by user";
          failure_exit_code_ = 130;
          return stop(BuildResult::kInterrupted);
        }
        controller_->Tick(runner_);
        if (wait == ProcessRunner::WaitResult::kTimeout) {
          if (DeadlineStopsBuild()) return stop(StoppedAtDeadline(err));
          continue;
        }
      }
      do {
        if (config_.dry_run) {
          // Dry run: every started edge "finishes" successfully at once, with no output. It starts all that
          // is ready, so the exits are made a chunk at a time, not one JobExit per edge of the build at once.
          finished.clear();
          for (; dry_run_next < dry_run_ids.size() && finished.size() < kDryRunExitChunk; ++dry_run_next) {
            JobExit& exit = finished.emplace_back();
            exit.id = dry_run_ids[dry_run_next];
            exit.exited_normally = true;
          }
        }
        for (JobExit& exit : finished) {
          --pending_commands;
          auto it = running_.find(exit.id);
          Edge* edge = it->second.edge;
          // However it ended (exit, crash, kill, requeue), what it held or was offered is no longer counted.
          if (server_) server_->ledger().RemoveJob(exit.id);
          if (!config_.dry_run && controller_->JobFinished(edge, &exit)) {
            // Requeued (e.g. OOM-killed): it will run again; nothing of this attempt is kept.
            running_.erase(it);
            plan_.Requeue(edge);
            continue;
          }
          if (!config_.dry_run && IsInterruptExit(exit)) {
            // The job ended itself as if interrupted: stop like an interrupt, but it is no longer
            // running, so its outputs are left alone.
            running_.erase(it);
            *err = "interrupted by user";
            failure_exit_code_ = 130;
            return stop(BuildResult::kInterrupted);
          }
          if (!FinishCommand(edge, &exit, err)) {
            running_.erase(exit.id);
            return stop(BuildResult::kFailed);
          }
          running_.erase(exit.id);
          if (!exit.success()) {
            ++failed_jobs_;
            failure_exit_code_ = exit.ExitStatusCode();
            if (failures_allowed) --failures_allowed;
          }
        }
      } while (dry_run_next < dry_run_ids.size());
      if (DeadlineStopsBuild()) return stop(StoppedAtDeadline(err));
      // Finished (or requeued) jobs hand their tokens back to make's pool.
      if (jobserver_) jobserver_->ReleaseTo(static_cast<size_t>(pending_commands) + ExtraSlots());
      continue;
    }
    // Nothing runs, and what is ready is predicted to end past the deadline: stop now, not at the deadline.
    if (failures_allowed && deadline_ && !config_.dry_run && (NothingReadyFitsDeadline() || DeadlineStopsBuild()))
      return stop(StoppedAtDeadline(err));
    // Nothing of this build runs, but the controller holds ready work back while other builds free memory.
    if (const int retry_ms = config_.dry_run ? -1 : controller_->IdleRetryMs(); retry_ms >= 0 && failures_allowed) {
      std::vector<JobExit> none;
      if (runner_->Wait(retry_ms, &none) == ProcessRunner::WaitResult::kInterrupted) {
        *err = "interrupted by user";
        failure_exit_code_ = 130;
        return stop(BuildResult::kInterrupted);
      }
      continue;
    }

    status_->BuildFinished();
    controller_->BuildEnded();
    if (failures_allowed == 0) {
      *err = config_.failures_allowed > 1 ? "subcommands failed" : "subcommand failed";
    } else if (failures_allowed < config_.failures_allowed) {
      *err = "cannot make progress due to previous errors";
    } else {
      *err = "stuck [this is a bug]";
    }
    return BuildResult::kFailed;
  }

  status_->BuildFinished();
  controller_->BuildEnded();
  return BuildResult::kSucceeded;
}

bool Builder::StartEdge(Edge* edge, std::string* err) {
  ScopedMetric metric = TimeScope("StartEdge");
  if (edge->is_phony()) return true;
  const int64_t start_time = NowMs();
  status_->BuildEdgeStarted(edge, start_time);

  // A filesystem timestamp taken as the command starts becomes the log's mtime (log v6+), so
  // inputs edited while the command runs still count as newer afterwards.
  TimeStamp command_start = (config_.dry_run || lock_file_path_.empty()) ? 0 : -1;
  for (Node* output : edge->outputs) {
    if (!disk_->MakeDirs(output->path)) return false;
    if (command_start == -1) {
      disk_->WriteFile(lock_file_path_, "");
      std::string stat_err;
      command_start = disk_->Stat(lock_file_path_, &stat_err);
      if (command_start == -1) command_start = 0;
    }
  }
  edge->command_start_time = std::max<TimeStamp>(command_start, 0);

  std::string depfile = edge->GetUnescapedDepfile();
  if (!depfile.empty() && !disk_->MakeDirs(depfile)) return false;

  std::string rspfile = edge->GetUnescapedRspfile();
  if (!rspfile.empty() && !disk_->WriteFile(rspfile, edge->GetBinding("rspfile_content"))) return false;

  if (config_.dry_run) {
    JobId id = next_dry_run_id_--;
    running_.emplace(id, RunningEdge{edge, start_time});
    dry_run_finished_.push_back(id);
    return true;
  }
  JobStartOptions options = controller_->PrepareJob(edge);
  options.use_console = edge->use_console();
  std::unique_ptr<TokenChannel> channel;
  if (server_) {
    std::string channel_err;
    channel = server_->OpenChannel(&options, &channel_err);
    if (!channel && !channel_warning_shown_) {  // the job runs as it would without --jobserver
      status_->Warning("jobserver: " + channel_err);
      channel_warning_shown_ = true;
    }
  }
  std::string start_err;
  JobId id = runner_->Start(edge->EvaluateCommand(), options, &start_err);
  if (id < 0) {
    // ninja names the reason (its "fatal: posix_spawn: Argument list too long") before it stops.
    if (!start_err.empty()) status_->Error(start_err);
    *err = "command '" + edge->EvaluateCommand() + "' failed.";
    return false;
  }
  running_.emplace(id, RunningEdge{edge, start_time});
  if (channel) server_->ledger().AddJob(id, std::move(channel));
  controller_->JobStarted(edge, id, runner_);
  return true;
}

bool Builder::FinishCommand(Edge* edge, JobExit* result, std::string* err) {
  ScopedMetric metric = TimeScope("FinishCommand");
  // Deps come first: msvc filtering rewrites the output even on failure, and a broken depfile
  // turns a successful command into a failed edge.
  std::vector<Node*> deps_nodes;
  const std::string deps_type = edge->GetBinding("deps");
  if (!deps_type.empty()) {
    std::string extract_err;
    if (!ExtractDeps(edge, result, deps_type, &deps_nodes, &extract_err) && result->success()) {
      if (!result->output.empty()) result->output.append("\n");
      result->output.append(extract_err);
      result->exited_normally = true;
      result->exit_code = 1;
    }
  }

  auto running = running_.find(result->id);
  const int64_t start_time = running != running_.end() ? running->second.start_time_ms : NowMs();
  const int64_t end_time = NowMs();
  status_->BuildEdgeFinished(edge, start_time, end_time, result->success(), result->ExitStatusCode(), result->output);

  if (!result->success()) return plan_.EdgeFinished(edge, Plan::EdgeResult::kFailed, err);

  TimeStamp record_mtime = 0;
  if (!config_.dry_run && !RestatOutputs(edge, &record_mtime, err)) return false;

  if (!plan_.EdgeFinished(edge, Plan::EdgeResult::kSucceeded, err)) return false;
  ++edges_done_;
  if (deadline_) deadline_->JobFinished(end_time - start_time);

  std::string rspfile = edge->GetUnescapedRspfile();
  if (!rspfile.empty() && !config_.keep_rsp) disk_->RemoveFile(rspfile);

  if (build_log_ && !build_log_->RecordCommand(edge, static_cast<int>(start_time), static_cast<int>(end_time),
                                               record_mtime)) {
    *err = std::string("Error writing to build log: ") + strerror(errno);
    return false;
  }

  if (!deps_type.empty() && !config_.dry_run && deps_log_) {
    for (Node* output : edge->outputs) {
      TimeStamp deps_mtime = disk_->Stat(output->path, err);
      if (deps_mtime == -1) return false;
      if (!deps_log_->RecordDeps(output, deps_mtime, deps_nodes)) {
        *err = std::string("Error writing to deps log: ") + strerror(errno);
        return false;
      }
    }
  }
  if (content_hashes_ && !config_.dry_run) {
    // Inputs newer than the command's start may not be what it read.
    const TimeStamp inputs_bound = edge->command_start_time > 0 ? edge->command_start_time : record_mtime;
    content_hashes_->RecordBuilt(edge, deps_nodes, inputs_bound);
  }
  return true;
}

bool Builder::RestatOutputs(Edge* edge, TimeStamp* record_mtime, std::string* err) {
  const bool restat = edge->GetBindingBool("restat");
  const bool generator = edge->GetBindingBool("generator");
  // A v5 log (kept for a ninja 1.11 sharing this directory) records output mtimes, with the
  // newest input's mtime for cleaned restat edges; v6+ record the command's start time.
  const bool legacy_v5 = build_log_ && build_log_->write_version() < 6;
  bool node_cleaned = false;

  TimeStamp mtime = legacy_v5 ? 0 : edge->command_start_time;
  if (legacy_v5 || mtime == 0 || restat || generator) {
    for (Node* output : edge->outputs) {
      TimeStamp new_mtime = disk_->Stat(output->path, err);
      if (new_mtime == -1) return false;
      mtime = std::max(mtime, new_mtime);
      if (restat && output->mtime == new_mtime) {
        // The command left this output alone (missing before and after counts too): whatever
        // depended only on it need not run.
        if (!plan_.CleanNode(&scan_, output, err)) return false;
        node_cleaned = true;
      }
    }
  }
  if (node_cleaned) {
    if (legacy_v5) {
      TimeStamp newest_input = 0;
      for (size_t i = 0; i < edge->inputs.size() - edge->order_only_deps; ++i) {
        TimeStamp input_mtime = disk_->Stat(edge->inputs[i]->path, err);
        if (input_mtime == -1) return false;
        newest_input = std::max(newest_input, input_mtime);
      }
      std::string depfile = edge->GetUnescapedDepfile();
      if (newest_input != 0 && edge->GetBinding("deps").empty() && !depfile.empty()) {
        TimeStamp depfile_mtime = disk_->Stat(depfile, err);
        if (depfile_mtime == -1) return false;
        newest_input = std::max(newest_input, depfile_mtime);
      }
      mtime = newest_input;
    } else {
      mtime = edge->command_start_time;
    }
  }
  *record_mtime = mtime;
  return true;
}

bool Builder::ExtractDeps(Edge* edge, JobExit* result, const std::string& deps_type, std::vector<Node*>* deps_nodes,
                          std::string* err) {
  std::vector<std::string> paths;
  if (deps_type == "msvc") {
    ShowIncludes parsed;
    if (!ParseShowIncludes(result->output, edge->GetBinding("msvc_deps_prefix"), &parsed, err)) return false;
    result->output = std::move(parsed.output);
    paths = std::move(parsed.includes);
  } else if (deps_type == "gcc") {
    std::string depfile = edge->GetUnescapedDepfile();
    if (depfile.empty()) {
      *err = "edge with deps=gcc but no depfile makes no sense";
      return false;
    }
    std::string content;
    if (disk_->ReadFile(depfile, &content, err) == DiskInterface::ReadStatus::kOtherError) return false;
    err->clear();
    if (content.empty()) return true;  // a missing depfile means no deps
    DepfileParser parser;
    if (!parser.Parse(&content, err)) return false;
    for (std::string_view in : parser.ins) paths.emplace_back(in);
    if (!config_.keep_depfile && disk_->RemoveFile(depfile) < 0) {
      *err = std::string("deleting depfile: ") + strerror(errno) + "\n";
      return false;
    }
  } else {
    *err = "unknown deps type '" + deps_type + "'";
    return false;
  }
  deps_nodes->reserve(paths.size());
  for (std::string& path : paths) {
    std::string canon_err;
    if (!CanonicalizePath(&path, &canon_err)) continue;
    deps_nodes->push_back(state_->GetNode(path));
  }
  return true;
}

bool Builder::LoadDyndeps(Node* node, std::string* err) {
  DyndepFile ddf;
  if (!scan_.LoadDyndeps(node, &ddf, err)) return false;
  return plan_.DyndepsLoaded(&scan_, node, ddf, err);
}

void Builder::Cleanup() {
  if (runner_ && !running_.empty()) {
    int signal_to_send = runner_->interrupt_signal() ? runner_->interrupt_signal() : SIGTERM;
    runner_->AbortAll(signal_to_send);
    for (const auto& [id, running] : running_) {
      Edge* edge = running.edge;
      std::string depfile = edge->GetUnescapedDepfile();
      for (Node* output : edge->outputs) {
        // Delete only what the interrupted command touched: a generator that failed must not
        // take the manifest with it. With a depfile the output cannot be trusted either way.
        std::string stat_err;
        TimeStamp new_mtime = disk_->Stat(output->path, &stat_err);
        if (new_mtime == -1) status_->Error(stat_err);
        if (!depfile.empty() || output->mtime != new_mtime) disk_->RemoveFile(output->path);
      }
      if (!depfile.empty()) disk_->RemoveFile(depfile);
    }
    running_.clear();
  }
  // Nothing runs any more: every token goes back, whatever stopped the build, and every channel closes.
  if (server_) server_->ledger().Clear();
  if (jobserver_) jobserver_->ReleaseTo(0);
  if (!lock_file_path_.empty()) {
    std::string stat_err;
    if (disk_->Stat(lock_file_path_, &stat_err) > 0) disk_->RemoveFile(lock_file_path_);
  }
}

}  // namespace headroom
