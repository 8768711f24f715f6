// End-of-build summary: peak memory against the budget, time spent waiting for memory, what the
// safety net did, and the heaviest jobs — in a handful of lines.
#include "headroom/report/summary.h"

#include <algorithm>

#include "headroom/util/byte_size.h"
#include "headroom/report/report_format.h"

namespace headroom {

namespace {

constexpr size_t kHeaviestShown = 3;

std::string Counted(int count, const char* one, const char* many) {
  return std::to_string(count) + " " + (count == 1 ? one : many);
}

// The budget holds the build's jobs (their summed memory), so that is the peak set against it.
uint64_t BuildPeakBytes(const BuildTimeline& timeline) {
  uint64_t peak = 0;
  for (const MemorySample& sample : timeline.samples()) peak = std::max(peak, sample.used_bytes);
  return peak;
}

std::string PeakLine(uint64_t peak, const MemoryDecisions& decisions) {
  if (peak == 0) return "the build's memory was not measured";
  std::string line = "the build's jobs peaked at " + FormatBytes(peak) + " together";
  if (decisions.budget_bytes == 0) return line;
  const double share = static_cast<double>(peak) * 100.0 / static_cast<double>(decisions.budget_bytes);
  return line + " of the " + FormatBytes(decisions.budget_bytes) + " budget (" +
         std::to_string(static_cast<int>(share + 0.5)) + "%)";
}

std::string WaitLine(const MemoryDecisions& decisions) {
  std::string line = decisions.jobs_waited == 0 ? "no job had to wait for memory"
                                                : Counted(decisions.jobs_waited, "job", "jobs") + " waited for memory, " +
                                                      FormatDuration(decisions.wait_ms_total) + " in all";
  // With -j above the CPUs a build runs fewer jobs than -j while memory is free: say why.
  if (decisions.cpu_waits) {
    line += "; " + Counted(decisions.cpu_waits, "job", "jobs") + " held for a CPU beside long compiles";
  }
  return line;
}

// Only what happened is listed; an empty line means the safety net never acted.
std::string SafetyLine(const MemoryDecisions& decisions) {
  std::vector<std::string> parts;
  if (decisions.freezes) parts.push_back(Counted(decisions.freezes, "freeze", "freezes"));
  if (decisions.safety_kills) parts.push_back(Counted(decisions.safety_kills, "job killed", "jobs killed") +
                                              " to save the build");
  if (decisions.oom_kills) parts.push_back(Counted(decisions.oom_kills, "OOM kill", "OOM kills"));
  if (decisions.requeues) parts.push_back(Counted(decisions.requeues, "requeue", "requeues"));
  if (decisions.over_budget_starts)
    parts.push_back(Counted(decisions.over_budget_starts, "job", "jobs") + " over budget, run alone");
  std::string line;
  for (const std::string& part : parts) line += (line.empty() ? "" : ", ") + part;
  return line;
}

std::vector<const TimelineJob*> HeaviestJobs(const BuildTimeline& timeline, size_t count) {
  std::vector<const TimelineJob*> jobs;
  for (const TimelineJob& job : timeline.jobs()) {
    if (job.peak_bytes > 0) jobs.push_back(&job);
  }
  const size_t shown = std::min(count, jobs.size());
  std::partial_sort(jobs.begin(), jobs.begin() + static_cast<std::ptrdiff_t>(shown), jobs.end(),
                    [](const TimelineJob* a, const TimelineJob* b) { return a->peak_bytes > b->peak_bytes; });
  jobs.resize(shown);
  return jobs;
}

std::string HeavyJobLine(const TimelineJob& job) {
  std::string line = "  " + FormatBytes(job.peak_bytes);
  if (job.estimate_bytes > 0) line += " (estimated " + FormatBytes(job.estimate_bytes) + ")";
  line += "  " + job.output;
  if (job.outcome != "ok") line += " [" + job.outcome + "]";
  return line;
}

// What protected the build from the kernel's OOM killer, and what that cost.
std::string GuardLine(const MemoryDecisions& decisions) {
  std::string line = decisions.guard;
  if (decisions.guard_stalls) {
    line += "; stalled at the limit " + Counted(decisions.guard_stalls, "time", "times") + ", " +
            Counted(decisions.guard_kills, "job", "jobs") + " killed and requeued";
  }
  if (decisions.limit_failures) {
    line += "; " + Counted(decisions.limit_failures, "job", "jobs") +
            (decisions.limit_failures == 1 ? " failed at the limit and was requeued"
                                           : " failed at the limit and were requeued");
  }
  if (decisions.early_starts) {
    line += "; " + Counted(decisions.early_starts, "job", "jobs") + " started before the memory it needed was free (" +
            std::to_string(decisions.parks) + " paused until it was)";
  }
  return line;
}

}  // namespace

// "remote: 12 jobs ran on the farm (at most 4 at once), 1 fell back to a local compile, 2 local"; "" without a farm.
static std::string RemoteLine(const MemoryDecisions& decisions) {
  if (decisions.remote_jobs + decisions.remote_fallbacks == 0) return "";
  return "remote: " + Counted(decisions.remote_jobs, "job", "jobs") + " ran on the farm (at most " +
         std::to_string(decisions.remote_most_at_once) + " at once), " + std::to_string(decisions.remote_fallbacks) +
         " fell back to a local compile, " + std::to_string(decisions.local_jobs) + " local";
}

// "shared the memory with up to 2 other headroom builds, which reserved up to 1.2 GiB at once"; the ledger's absence.
static std::string SharedLine(const MemoryDecisions& decisions) {
  if (!decisions.ledger.empty()) return decisions.ledger;
  if (decisions.other_builds_most == 0) return "";
  return "shared the memory with up to " + Counted(decisions.other_builds_most, "other headroom build", "other headroom builds") +
         ", which reserved up to " + FormatBytes(decisions.others_owed_most) + " at once";
}

bool SummaryWanted(const MemoryDecisions& decisions, bool verbose) {
  return decisions.anything_happened() || verbose;
}

void AddDecisions(MemoryDecisions* total, const MemoryDecisions& pass) {
  total->jobs_waited += pass.jobs_waited;
  total->wait_ms_total += pass.wait_ms_total;
  total->cpu_waits += pass.cpu_waits;
  total->freezes += pass.freezes;
  total->safety_kills += pass.safety_kills;
  total->oom_kills += pass.oom_kills;
  total->requeues += pass.requeues;
  total->over_budget_starts += pass.over_budget_starts;
  if (pass.budget_bytes) total->budget_bytes = pass.budget_bytes;
  if (pass.reserve_bytes) total->reserve_bytes = pass.reserve_bytes;
  total->guard_stalls += pass.guard_stalls;
  total->guard_kills += pass.guard_kills;
  total->limit_failures += pass.limit_failures;
  total->early_starts += pass.early_starts;
  total->parks += pass.parks;
  if (!pass.guard.empty()) total->guard = pass.guard;
  total->other_builds_most = std::max(total->other_builds_most, pass.other_builds_most);
  total->others_owed_most = std::max(total->others_owed_most, pass.others_owed_most);
  if (!pass.ledger.empty()) total->ledger = pass.ledger;
  total->remote_jobs += pass.remote_jobs;
  total->remote_fallbacks += pass.remote_fallbacks;
  total->local_jobs += pass.local_jobs;
  total->remote_most_at_once = std::max(total->remote_most_at_once, pass.remote_most_at_once);
}

std::vector<std::string> SummaryLines(const BuildTimeline& timeline, const MemoryDecisions& decisions) {
  std::vector<std::string> lines{PeakLine(BuildPeakBytes(timeline), decisions), WaitLine(decisions)};
  if (std::string safety = SafetyLine(decisions); !safety.empty()) lines.push_back(safety);
  if (!decisions.guard.empty()) lines.push_back(GuardLine(decisions));
  if (std::string remote = RemoteLine(decisions); !remote.empty()) lines.push_back(remote);
  if (std::string shared = SharedLine(decisions); !shared.empty()) lines.push_back(shared);
  std::vector<const TimelineJob*> heaviest = HeaviestJobs(timeline, kHeaviestShown);
  if (!heaviest.empty()) {
    lines.push_back(heaviest.size() == 1 ? "heaviest job:" : "heaviest jobs:");
    for (const TimelineJob* job : heaviest) lines.push_back(HeavyJobLine(*job));
  }
  return lines;
}

void PrintSummary(FILE* out, const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += "headroom: " + line + "\n";
  fwrite(text.data(), 1, text.size(), out);
  fflush(out);
}

}  // namespace headroom
