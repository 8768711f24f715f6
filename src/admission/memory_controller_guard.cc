// MemoryController's part with the build guard (build_guard.h): arming it, ending a stall at its limit by a kill,
// telling a failure at the limit from a real one, and releasing it when the build stops with jobs running.
#include <signal.h>

#include <algorithm>

#include "headroom/admission/memory_controller.h"
#include "headroom/graph/graph.h"
#include "headroom/util/byte_size.h"

namespace headroom {

bool MemoryController::guard_active() const { return guard_ != nullptr && guard_->armed(); }

// The build's cgroup is capped at the budget, or at what was available when the build began if that is
// less (a cap above what is free would let the enclosing cgroup's, or the machine's, OOM killer act first),
// less a margin for what shares that enclosing limit from outside the group: headroom itself and its logs.
void MemoryController::ArmGuard(const MemoryReading& first) {
  constexpr uint64_t kMinGuardBytes = 64ull << 20;
  constexpr uint64_t kMinMarginBytes = 16ull << 20, kMaxMarginBytes = 64ull << 20;
  uint64_t limit = core_.budget_bytes();
  if (first.available_bytes > 0) limit = std::min(limit, first.available_bytes);
  limit -= std::min(limit / 2, std::clamp<uint64_t>(limit / 32, kMinMarginBytes, kMaxMarginBytes));
  limit = std::max(limit, kMinGuardBytes);
  std::string why_not;
  guard_ = parts_.meter->ArmGuard(limit, &why_not);
  decisions_.guard = guard_ ? guard_->Describe()
                            : "no build guard: " + why_not +
                                  "; the kernel's OOM killer stays in charge when a job outgrows its estimate";
}

// Tasks that wait at the guard's limit (or are throttled at memory.high) get memory only when a job ends:
// the youngest one that holds real memory is killed and requeued, one kill at a time.
void MemoryController::CheckGuard(int64_t now, ProcessRunner* runner) {
  if (!guard_active()) return;
  bool kill_in_flight = false;
  for (const auto& [id, running] : running_) kill_in_flight |= KilledByHeadroom(running);
  // Builds sharing the guard group take turns to kill: this build's turn ends when its victim has ended.
  if (!kill_in_flight) guard_->EndKillTurn();
  const GuardCheck check = guard_->Check(now);
  if (!check.stalled) {
    guard_stalled_ = false;
    return;
  }
  if (!guard_stalled_) {
    ++decisions_.guard_stalls;
    guard_stalled_since_ms_ = now;
  }
  guard_stalled_ = true;
  const int64_t stalled_for = now - guard_stalled_since_ms_;
  // Every build in the group sees this stall; while another one's victim is still dying, this one waits, but not
  // for ever: a turn held past kMaxTurnWaitMs (a victim that does not die) no longer stops this build acting.
  if (!kill_in_flight && !guard_->TakeKillTurn() && stalled_for < kMaxTurnWaitMs) return;
  std::vector<RunningJob> jobs = RunningJobs();
  // A job running a nested headroom build: that build's guard sees the stall too (v1 marks every group below the
  // one at its limit) and kills one of its own jobs, which costs far less than the whole nested build.
  if (!nested_owed_.empty() && stalled_for < kNestedBuildDeferMs) {
    std::erase_if(jobs, [this](const RunningJob& job) { return nested_owed_.count(static_cast<int>(job.id)) > 0; });
  }
  const uint64_t meaningful = guard_->limit_bytes() / 32;
  // In a shared group the youngest job holding real memory pays, whichever build runs it.
  const bool defer = !kill_in_flight && guard_->AnotherBuildShouldPay(meaningful, now);
  const std::optional<uint64_t> victim = defer ? std::nullopt : ChooseGuardVictim(jobs, kill_in_flight, meaningful);
  if (!victim) {
    if (!kill_in_flight) guard_->EndKillTurn();  // nothing of this build's to free, or not its turn to pay
    return;
  }
  ++decisions_.guard_kills;
  ApplySafetyAction(SafetyAction{SafetyAction::Kind::kKill, *victim, check.detail + "; killing the youngest job"},
                    runner);
}

// Beside other builds a headroom kill is no proof that a job cannot succeed: it is killed to make room for jobs of
// builds that do not run "alone" with it. A job that held far less than the budget then gets more attempts (its
// build publishes its need and the others leave it room, LedgerEntry::waiting_bytes); one that nearly fills the
// budget, or a kernel kill, gives up as alone.
RequeueConfig MemoryController::RequeueFor(MemoryFailureKind kind, uint64_t peak) const {
  RequeueConfig config;
  constexpr int kAttemptsBesideOtherBuilds = 8;
  if (kind == MemoryFailureKind::kHeadroomKill && decisions_.other_builds_most > 0 && peak < core_.budget_bytes() / 2) {
    config.max_attempts = kAttemptsBesideOtherBuilds;
  }
  return config;
}

// A build's turn to kill in a shared guard group ends with its last victim, here and not only at its next tick: a
// build whose victim was its last running job ticks no more, and kept the turn (and every other build from ending
// the group's stall) for good; seen with four concurrent builds in one box.
void MemoryController::EndKillTurnOnceVictimsEnded() {
  if (!guard_active()) return;
  for (const auto& [key, other] : core_.runs()) {
    if (other.killed) return;
  }
  guard_->EndKillTurn();
}

// Interrupt-like ends (as the builder reads them) stop the build; they are never retried.
static bool EndedLikeAnInterrupt(const JobExit& exit) {
  if (exit.exited_normally) return exit.exit_code == 130;
  return exit.term_signal == SIGINT || exit.term_signal == SIGTERM || exit.term_signal == SIGHUP;
}

// Under the v1 guard a page fault at the limit waits, but a charge inside a system call fails: a job writing
// a tmpfs file (a compiler's temp file in a tmpfs /tmp, /dev/shm) gets ENOMEM and exits non-zero. The limit
// counter rising during its run is the sign; it also rises when the kernel only reclaimed cache, so a real
// error that happens then costs one retry, and a second failure is shown as ninja shows it.
bool MemoryController::FailedAtGuardLimit(const Edge* edge, const Running& running, const JobExit& exit) {
  if (exit.success() || EndedLikeAnInterrupt(exit) || !guard_active()) return false;
  if (core_.LimitFailures(edge->id) > 0) return false;
  return guard_->ReadLimitHits() > running.guard_limit_hits_at_start;
}

// The failed attempt's output is dropped, so -d explain keeps its first line: where tools put the error
// (dd, a compiler), enough to see an ENOMEM.
void MemoryController::ExplainLimitRetry(const Edge* edge, const JobExit& exit, const std::string& decision) {
  if (!explain_) return;
  constexpr size_t kMaxQuoted = 200;
  std::string_view output = exit.output;
  output.remove_prefix(std::min(output.size(), output.find_first_not_of("\r\n")));
  std::string_view first_line = output.substr(0, std::min(output.find_first_of("\r\n"), kMaxQuoted));
  std::string message = "retrying '" + OutputOf(edge) + "': it exited with " +
                        std::to_string(exit.ExitStatusCode()) + " after the build hit its " +
                        FormatBytes(guard_->limit_bytes()) +
                        " limit, where a write to memory-backed files fails instead of waiting (" + decision + ")";
  if (!first_line.empty()) message += "; its output began: " + std::string(first_line);
  Explain(message);
}

// The build is stopping with jobs still running: lift the cap and thaw them first, so that none waits at
// the limit or sits frozen while the runner signals and waits for it.
void MemoryController::ReleaseGuardForAbort() {
  if (guard_) guard_->Release();
  for (auto& [id, running] : running_) {
    SchedulerCore::Run* run = core_.FindRun(static_cast<CoreRunKey>(running.meter_key));
    if (!run || !run->view.frozen) continue;
    Resume(running, runner_);
    run->view.frozen = false;
  }
}

}  // namespace headroom
