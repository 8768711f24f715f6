// Critical-path weights: each job's weight is its own cost plus the heaviest weight among its dependents.
#include "headroom/admission/priority.h"

#include <algorithm>

#include <fmt/format.h>

namespace headroom {
namespace {

// Memory-heavy jobs are hard to pack late (nothing else fits beside them); starting them early lets light
// jobs fill around them. A job needing the whole budget counts as twice as long.
constexpr double kMemoryWeight = 1.0;

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

}  // namespace

std::optional<std::vector<double>> ComputePriorities(const std::vector<std::vector<uint32_t>>& dependents,
                                                     const std::vector<PriorityJob>& jobs, PriorityMode mode,
                                                     uint64_t budget_bytes, std::string* error) {
  size_t n = jobs.size();
  if (dependents.size() != n) {
    *error = fmt::format("priority: {} adjacency lists for {} jobs", dependents.size(), n);
    return std::nullopt;
  }
  // Kahn's algorithm on the reversed graph: a job is finished once all its dependents are.
  std::vector<uint32_t> pending(n, 0);
  for (size_t j = 0; j < n; ++j) {
    for (uint32_t k : dependents[j]) {
      if (k >= n) {
        *error = fmt::format("priority: job {} has an out-of-range dependent {}", j, k);
        return std::nullopt;
      }
    }
    pending[j] = static_cast<uint32_t>(dependents[j].size());
  }
  std::vector<std::vector<uint32_t>> dependencies(n);
  for (uint32_t j = 0; j < n; ++j) {
    for (uint32_t k : dependents[j]) dependencies[k].push_back(j);
  }
  std::vector<double> costs = OwnCosts(jobs, mode, budget_bytes);
  std::vector<double> weights(n, 0.0);
  std::vector<uint32_t> queue;
  for (uint32_t j = 0; j < n; ++j) {
    if (pending[j] == 0) queue.push_back(j);
  }
  size_t done = 0;
  while (!queue.empty()) {
    uint32_t j = queue.back();
    queue.pop_back();
    ++done;
    double below = 0.0;
    for (uint32_t k : dependents[j]) below = std::max(below, weights[k]);
    weights[j] = costs[j] + below;
    for (uint32_t d : dependencies[j]) {
      if (--pending[d] == 0) queue.push_back(d);
    }
  }
  if (done != n) {
    *error = "priority: the job graph has a cycle";
    return std::nullopt;
  }
  return weights;
}

std::optional<PriorityMode> ParsePriorityMode(const std::string& name) {
  if (name == "edges") return PriorityMode::kEdgeCount;
  if (name == "duration") return PriorityMode::kDuration;
  if (name == "memory") return PriorityMode::kDurationAndMemory;
  return std::nullopt;
}

}  // namespace headroom
