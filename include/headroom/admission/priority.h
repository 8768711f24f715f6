// Scheduling priorities: critical-path weights over a job DAG, by edge count (ninja's order), by predicted
// duration, or by duration with a bonus for memory-heavy (hard-to-pack) jobs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "headroom/plan/critical_path.h"

namespace headroom {

enum class PriorityMode {
  kEdgeCount,          // ninja >= 1.12: longest chain of jobs below, each counting 1.
  kDuration,           // longest chain of predicted durations below (unknown durations: the mean known one).
  kDurationAndMemory,  // kDuration with each job's own cost scaled up by its share of the budget.
};

struct PriorityJob {
  int64_t duration_ms = 0;  // 0 = unknown.
  uint64_t peak_bytes = 0;
};

// `dependents[j]` lists the jobs that need job j's outputs (edges j -> k). Returns one weight per job:
// higher runs first. Returns nullopt and sets *error on a cycle. Iterative, so deep graphs cannot overflow
// the stack. `budget_bytes` scales the memory bonus (0 disables it).
std::optional<std::vector<double>> ComputePriorities(const std::vector<std::vector<uint32_t>>& dependents,
                                                     const std::vector<PriorityJob>& jobs, PriorityMode mode,
                                                     uint64_t budget_bytes, std::string* error);

// The builder's critical-path weight of one job (MemoryController::EdgeCost, and the simulator when it plays
// the builder). Without history every job counts 1: ninja's order. With it, the predicted duration in ms grown
// by the job's share of the usable memory (budget - reserve), as in kDurationAndMemory, and never below one
// second, so quick jobs keep ninja's order among themselves; a job needing more than half the usable memory
// cannot run beside another such job and is marked exclusive (ChainExclusiveCosts).
EdgeWeight BuilderEdgeWeight(int64_t duration_ms, uint64_t peak_bytes, uint64_t usable_bytes, bool any_history);

// Parses "edges", "duration", "memory" (for a command-line switch); nullopt on anything else.
std::optional<PriorityMode> ParsePriorityMode(const std::string& name);

}  // namespace headroom
