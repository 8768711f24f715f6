// Freeze/thaw/kill decisions under critical memory, and the requeue policy for jobs killed for memory.
#include "headroom/admission/safety_net.h"

#include <algorithm>

#include <fmt/format.h>

#include "headroom/util/byte_size.h"

namespace headroom {
namespace {

SafetyAction Action(SafetyAction::Kind kind, uint64_t id, std::string reason) {
  return SafetyAction{kind, id, std::move(reason)};
}

}  // namespace

uint64_t SafetyNet::CriticalBytes(uint64_t budget) const {
  if (config_.critical_bytes != 0) return config_.critical_bytes;
  return admission_.Reserve(budget) / 2;
}

std::vector<SafetyAction> SafetyNet::Decide(const MemoryReading& reading, std::span<const RunningJob> running,
                                            int64_t now_ms) {
  std::vector<SafetyAction> actions;
  uint64_t budget = admission_.Budget(reading);
  if (running.empty() || budget == 0) {
    critical_since_ms_ = -1;
    return actions;
  }
  // The oldest job must always progress: it is never frozen, and one frozen earlier is thawed at once.
  if (running.front().frozen) {
    actions.push_back(Action(SafetyAction::Kind::kThaw, running.front().id, "oldest job always runs"));
  }
  uint64_t headroom = admission_.Headroom(reading, running);
  uint64_t critical = CriticalBytes(budget);
  if (headroom >= critical) {
    critical_since_ms_ = -1;
    // Thaw the oldest frozen job once its remaining growth fits above the reserve (hysteresis).
    uint64_t reserve = admission_.Reserve(budget);
    for (size_t i = 1; i < running.size(); ++i) {
      if (!running[i].frozen || running[i].parked) continue;  // admission resumes what it parked
      if (headroom >= reserve + running[i].Owes()) {
        actions.push_back(Action(SafetyAction::Kind::kThaw, running[i].id,
                                 fmt::format("{} available again", FormatBytes(headroom))));
      }
      break;  // thaw in age order, one at a time.
    }
    return actions;
  }
  if (critical_since_ms_ < 0) critical_since_ms_ = now_ms;
  std::string why = fmt::format("only {} available (critical below {})", FormatBytes(headroom), FormatBytes(critical));
  // Freeze every job other than the oldest that is still growing (several growing jobs outrun a
  // one-per-tick freeze), or else the youngest unfrozen one: freezing stops growth without losing work.
  for (size_t i = running.size(); i-- > 1;) {
    if (!running[i].frozen && now_ms - running[i].last_growth_ms <= config_.growing_within_ms) {
      actions.push_back(Action(SafetyAction::Kind::kFreeze, running[i].id, why + "; it is still growing"));
    }
  }
  if (!actions.empty() && actions.back().kind == SafetyAction::Kind::kFreeze) return actions;
  for (size_t i = running.size(); i-- > 1;) {
    if (!running[i].frozen) {
      actions.push_back(Action(SafetyAction::Kind::kFreeze, running[i].id, why));
      return actions;
    }
  }
  // Everyone but the oldest is frozen and memory is still critical: frozen jobs keep their memory, so
  // only killing one frees it. Kill the youngest (least work lost) after a grace period, at once if dire.
  bool dire = static_cast<double>(headroom) < config_.kill_now_fraction * static_cast<double>(critical);
  if (running.size() > 1 && (dire || now_ms - critical_since_ms_ >= config_.kill_grace_ms)) {
    actions.push_back(Action(SafetyAction::Kind::kKill, running.back().id, why + "; killing the youngest job"));
    critical_since_ms_ = now_ms;  // give the freed memory a grace period before the next kill.
  }
  return actions;
}

std::optional<uint64_t> ChooseGuardVictim(std::span<const RunningJob> running, bool kill_in_flight,
                                          uint64_t meaningful_bytes) {
  if (running.empty() || kill_in_flight) return std::nullopt;
  for (size_t i = running.size(); i-- > 1;) {
    if (running[i].rss >= meaningful_bytes) return running[i].id;
  }
  return running.back().id;
}

RequeueDecision DecideRequeue(int failures, uint64_t observed_peak, uint64_t previous_estimate, uint64_t budget,
                              bool killed_by_kernel, const RequeueConfig& config) {
  return DecideRequeue(failures, observed_peak, previous_estimate, budget,
                       killed_by_kernel ? MemoryFailureKind::kKernelOomKill : MemoryFailureKind::kHeadroomKill,
                       config);
}

RequeueDecision DecideRequeue(int failures, uint64_t observed_peak, uint64_t previous_estimate, uint64_t budget,
                              MemoryFailureKind kind, const RequeueConfig& config) {
  uint64_t raised = std::max(previous_estimate, ScaleBytes(observed_peak, config.raise_factor));
  const char* how = kind == MemoryFailureKind::kKernelOomKill  ? "OOM-killed"
                    : kind == MemoryFailureKind::kHeadroomKill ? "killed to save memory"
                                                               : "failed at the build's memory limit";
  if (failures >= config.max_attempts) {
    return {RequeueDecision::Kind::kGiveUp, raised,
            fmt::format("{} at {}, budget {}, after {} attempt(s): raise --mem-budget or free memory", how,
                        FormatBytes(observed_peak), FormatBytes(budget), failures)};
  }
  // From the second failure on it runs alone: whatever killed it, it then has the whole budget.
  bool alone = failures >= 2 || raised >= budget;
  return {alone ? RequeueDecision::Kind::kRetryAlone : RequeueDecision::Kind::kRetry, raised,
          fmt::format("{} at {}; retrying{} with an estimate of {}", how, FormatBytes(observed_peak),
                      alone ? " alone" : "", FormatBytes(raised))};
}

}  // namespace headroom
