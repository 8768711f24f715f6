// Tests for the critical-path routine the plan and the simulator share (plan/critical_path.h).
#include <gtest/gtest.h>

#include <vector>

#include "headroom/plan/critical_path.h"

namespace headroom {
namespace {

// Jobs 0..n-1 in producers-first order; dependencies[j] lists what job j needs.
std::vector<int64_t> Weights(const std::vector<std::vector<int>>& dependencies, const std::vector<int64_t>& costs) {
  std::vector<int> order(costs.size());
  for (size_t j = 0; j < order.size(); ++j) order[j] = static_cast<int>(j);
  std::vector<int64_t> weights(costs.size(), -1);
  AccumulateCriticalPath(
      order, [&](int j) { return costs[j]; },
      [&](int j, const auto& visit) {
        for (int d : dependencies[j]) visit(d);
      },
      [&](int j) -> int64_t& { return weights[j]; });
  return weights;
}

TEST(CriticalPathTest, WeightIsOwnCostPlusTheHeaviestChainThatNeedsIt) {
  // 0 feeds 1 and 2; 1 and 2 feed 3; 4 is alone.
  std::vector<std::vector<int>> dependencies = {{}, {0}, {0}, {1, 2}, {}};
  EXPECT_EQ(Weights(dependencies, {1, 5, 2, 1, 3}), (std::vector<int64_t>{7, 6, 3, 1, 3}));
}

TEST(CriticalPathTest, ZeroCostJobsPassWeightThrough) {
  // A phony (cost 0) between two commands neither adds nor hides weight.
  EXPECT_EQ(Weights({{}, {0}, {1}}, {1, 0, 1}), (std::vector<int64_t>{2, 1, 1}));
}

TEST(CriticalPathTest, DeepChainsNeedNoRecursion) {
  const size_t depth = 200'000;
  std::vector<std::vector<int>> dependencies(depth);
  for (size_t j = 1; j < depth; ++j) dependencies[j] = {static_cast<int>(j - 1)};
  std::vector<int64_t> weights = Weights(dependencies, std::vector<int64_t>(depth, 1));
  EXPECT_EQ(weights.front(), static_cast<int64_t>(depth));
  EXPECT_EQ(weights.back(), 1);
}

TEST(CriticalPathTest, ExclusiveJobsAreChainedOthersKeepTheirCosts) {
  // Jobs 1 and 3 cannot run beside each other: each counts at least as long as both in series.
  std::vector<int64_t> costs = {5, 2, 7, 3, 1};
  ChainExclusiveCosts(costs, {false, true, false, true, false});
  EXPECT_EQ(costs, (std::vector<int64_t>{5, 5, 7, 5, 1}));
  // A lone exclusive job keeps its own cost; none exclusive changes nothing.
  std::vector<int64_t> lone = {4, 9};
  ChainExclusiveCosts(lone, {true, false});
  EXPECT_EQ(lone, (std::vector<int64_t>{4, 9}));
}

TEST(CriticalPathTest, ChainedExclusiveJobsOutrankLongerLightJobs) {
  // Three heavy 2 s jobs (exclusive) and a light 3 s job, all feeding a 1 s link: the heavies run in series
  // (6 s) and must start first, though the light job alone is longer than any of them.
  std::vector<std::vector<int>> dependencies = {{}, {}, {}, {}, {0, 1, 2, 3}};
  std::vector<int64_t> costs = {2, 2, 2, 3, 1};
  ChainExclusiveCosts(costs, {true, true, true, false, false});
  std::vector<int64_t> weights = Weights(dependencies, costs);
  EXPECT_EQ(weights, (std::vector<int64_t>{7, 7, 7, 4, 1}));
}

}  // namespace
}  // namespace headroom
