// The critical-path weight, one routine for the builder's plan and the scheduler simulator: a job's weight
// is its own cost plus the largest weight among the jobs that need its outputs (its longest chain to the end).
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

namespace headroom {

// An edge's weight on the critical path, and whether it is one of the jobs that cannot run beside one
// another (see ChainExclusiveCosts).
struct EdgeWeight {
  int64_t cost = 1;
  bool exclusive = false;
};

// `order` lists the jobs so that each comes after every job it depends on (producers first). `own_cost(job)`
// is a job's cost (called once per job, costs >= 0), `for_each_dependency(job, visit)` calls `visit(d)` for
// each job d whose outputs `job` needs (every d must be in `order`), and `weight(job)` is a job's writable
// weight. Iterative, so deep graphs cannot overflow the stack.
template <typename Order, typename OwnCost, typename ForEachDependency, typename WeightOf>
void AccumulateCriticalPath(const Order& order, OwnCost&& own_cost, ForEachDependency&& for_each_dependency,
                            WeightOf&& weight) {
  for (const auto& job : order) weight(job) = 0;
  // Walking consumers before producers: when a job is reached, every job that needs it has already left the
  // heaviest chain below it in weight(job); adding its own cost completes it before it is handed down.
  for (auto it = std::rbegin(order); it != std::rend(order); ++it) {
    const auto& job = *it;
    weight(job) += own_cost(job);
    const auto through_job = weight(job);
    for_each_dependency(job, [&](const auto& dependency) {
      weight(dependency) = std::max(weight(dependency), through_job);
    });
  }
}

// Jobs that cannot run beside one another (each needs more than half the memory the build may use) run in
// series whatever order they start in: together they are one chain as long as the sum of their costs. Each
// one's own cost is raised to at least that sum, so the chain starts as early as the graph allows and lighter
// jobs fill the memory around it, instead of the heavy jobs queueing at the end behind work that could have
// run beside them. Costs of jobs not marked exclusive are left as they are.
template <typename Cost>
void ChainExclusiveCosts(std::vector<Cost>& costs, const std::vector<bool>& exclusive) {
  Cost chain = 0;
  for (size_t i = 0; i < costs.size(); ++i) {
    if (exclusive[i]) chain += costs[i];
  }
  for (size_t i = 0; i < costs.size(); ++i) {
    if (exclusive[i]) costs[i] = std::max(costs[i], chain);
  }
}

}  // namespace headroom
