// Scheduling priorities over a job DAG: the cost of each job by mode, weighed along the shared critical path.
#include "headroom/admission/priority.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "headroom/plan/critical_path.h"

namespace headroom {
namespace {

// Memory-heavy jobs are hard to pack late (nothing else fits beside them); starting them early lets light
// jobs fill around them. A job needing the whole budget counts as twice as long.
constexpr double kMemoryWeight = 1.0;
// The builder weighs jobs in ms but counts any job at least this long: jobs quicker than a second are not
// ordered by their durations (mostly noise), only by their memory, and keep ninja's order where that is alike.
constexpr int64_t kQuickJobMs = 1000;
constexpr double kQuickShareStep = 0.05;

double MeanKnownDuration(const std::vector<PriorityJob>& jobs) {
  double total = 0;
  int known = 0;
  for (const PriorityJob& job : jobs) {
    if (job.duration_ms > 0) {
      total += static_cast<double>(job.duration_ms);
      ++known;
    }
  }
  return known == 0 ? 1.0 : total / known;
}

std::vector<double> OwnCosts(const std::vector<PriorityJob>& jobs, PriorityMode mode, uint64_t budget) {
  std::vector<double> costs(jobs.size(), 1.0);
  if (mode == PriorityMode::kEdgeCount) return costs;
  double fallback = MeanKnownDuration(jobs);
  for (size_t i = 0; i < jobs.size(); ++i) {
    costs[i] = jobs[i].duration_ms > 0 ? static_cast<double>(jobs[i].duration_ms) : fallback;
    if (mode == PriorityMode::kDurationAndMemory && budget > 0) {
      double share = std::min(1.0, static_cast<double>(jobs[i].peak_bytes) / static_cast<double>(budget));
      costs[i] *= 1.0 + kMemoryWeight * share;
    }
  }
  return costs;
}

// Kahn's algorithm: every job after all the jobs it depends on; nullopt when a cycle leaves some unplaced.
std::optional<std::vector<uint32_t>> ProducersFirst(const std::vector<std::vector<uint32_t>>& dependents,
                                                    const std::vector<std::vector<uint32_t>>& dependencies) {
  std::vector<uint32_t> pending(dependencies.size());
  std::vector<uint32_t> order;
  order.reserve(dependencies.size());
  for (uint32_t j = 0; j < dependencies.size(); ++j) {
    pending[j] = static_cast<uint32_t>(dependencies[j].size());
    if (pending[j] == 0) order.push_back(j);
  }
  // `order` doubles as the queue: jobs are appended once ready and read in turn.
  for (size_t next = 0; next < order.size(); ++next) {
    for (uint32_t k : dependents[order[next]]) {
      if (--pending[k] == 0) order.push_back(k);
    }
  }
  if (order.size() != dependencies.size()) return std::nullopt;
  return order;
}

}  // namespace

std::optional<std::vector<double>> ComputePriorities(const std::vector<std::vector<uint32_t>>& dependents,
                                                     const std::vector<PriorityJob>& jobs, PriorityMode mode,
                                                     uint64_t budget_bytes, std::string* error) {
  size_t n = jobs.size();
  if (dependents.size() != n) {
    *error = fmt::format("priority: {} adjacency lists for {} jobs", dependents.size(), n);
    return std::nullopt;
  }
  std::vector<std::vector<uint32_t>> dependencies(n);
  for (uint32_t j = 0; j < n; ++j) {
    for (uint32_t k : dependents[j]) {
      if (k >= n) {
        *error = fmt::format("priority: job {} has an out-of-range dependent {}", j, k);
        return std::nullopt;
      }
      dependencies[k].push_back(j);
    }
  }
  std::optional<std::vector<uint32_t>> order = ProducersFirst(dependents, dependencies);
  if (!order) {
    *error = "priority: the job graph has a cycle";
    return std::nullopt;
  }
  std::vector<double> costs = OwnCosts(jobs, mode, budget_bytes);
  std::vector<double> weights(n, 0.0);
  AccumulateCriticalPath(
      *order, [&](uint32_t j) { return costs[j]; },
      [&](uint32_t j, const auto& visit) {
        for (uint32_t d : dependencies[j]) visit(d);
      },
      [&](uint32_t j) -> double& { return weights[j]; });
  return weights;
}

EdgeWeight BuilderEdgeWeight(int64_t duration_ms, uint64_t peak_bytes, uint64_t usable_bytes, bool any_history) {
  if (!any_history) return {1, false};
  double share = usable_bytes == 0 ? 0.0
                                   : std::min(1.0, static_cast<double>(peak_bytes) / static_cast<double>(usable_bytes));
  // The memory weight applies to quick jobs too: beside an exclusive job only a few medium ones fit, and if
  // small ones go first (a tie would keep the manifest's order) the medium ones are left for the end, where
  // they run with nothing to hide them. Small jobs fill any gap. For quick jobs the share counts in steps of
  // kQuickShareStep, so jobs of alike memory (the usual case: a few MiB each) keep ninja's order exactly.
  if (duration_ms < kQuickJobMs) share = std::floor(share / kQuickShareStep) * kQuickShareStep;
  double cost = static_cast<double>(std::max(kQuickJobMs, duration_ms)) * (1.0 + kMemoryWeight * share);
  return {static_cast<int64_t>(cost + 0.5), usable_bytes > 0 && peak_bytes > usable_bytes / 2};
}

std::optional<PriorityMode> ParsePriorityMode(const std::string& name) {
  if (name == "edges") return PriorityMode::kEdgeCount;
  if (name == "duration") return PriorityMode::kDuration;
  if (name == "memory") return PriorityMode::kDurationAndMemory;
  return std::nullopt;
}

}  // namespace headroom
