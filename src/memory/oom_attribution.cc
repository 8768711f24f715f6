// OOM attribution from the job cgroup's oom_kill counter (strong) or SIGKILL + /proc/vmstat (weak).
#include "headroom/memory/oom_attribution.h"

#include <fmt/format.h>

#include "headroom/memory/memory_parsers.h"

namespace headroom {

const char* OomEvidenceName(OomEvidence evidence) {
  switch (evidence) {
    case OomEvidence::kNone:
      return "none";
    case OomEvidence::kWeak:
      return "weak";
    case OomEvidence::kStrong:
      return "strong";
  }
  return "none";
}

OomVerdict AttributeOom(const OomFacts& facts) {
  OomVerdict verdict;
  if (facts.cgroup_oom_kills) {
    if (*facts.cgroup_oom_kills > 0) {
      verdict.oom_killed = true;
      verdict.evidence = OomEvidence::kStrong;
      verdict.explanation = fmt::format("the job's cgroup counted {} OOM kill(s)", *facts.cgroup_oom_kills);
    } else {
      verdict.explanation = facts.killed_by_sigkill ? "SIGKILL, but the job's cgroup counted no OOM kill"
                                                    : "the job's cgroup counted no OOM kill";
    }
    return verdict;
  }
  bool system_counter_rose = facts.system_oom_kills_at_start && facts.system_oom_kills_at_end &&
                             *facts.system_oom_kills_at_end > *facts.system_oom_kills_at_start;
  if ((facts.killed_by_sigkill || facts.exited_non_zero) && system_counter_rose) {
    verdict.oom_killed = true;
    verdict.evidence = OomEvidence::kWeak;
    const uint64_t kills = *facts.system_oom_kills_at_end - *facts.system_oom_kills_at_start;
    verdict.explanation = facts.killed_by_sigkill
                              ? fmt::format("SIGKILL while the system counted {} OOM kill(s)", kills)
                              : fmt::format("it failed while the system counted {} OOM kill(s), maybe of a process "
                                            "of its own (nvcc fails when its cicc is killed)",
                                            kills);
  } else if (facts.killed_by_sigkill) {
    verdict.explanation = "SIGKILL without any OOM kill counted by the system";
  }
  return verdict;
}

std::optional<uint64_t> SystemOomCounter::Read() {
  std::string text, err;
  if (!vmstat_.Read(&text, &err)) return std::nullopt;
  return ParseKeyedValue(text, "oom_kill");
}

}  // namespace headroom
