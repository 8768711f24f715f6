// --deadline decisions: start a job only if it is predicted to end by the deadline, prefer jobs whose chain
// to the targets still fits as it nears, and let running jobs predicted to end within the grace finish.
#include "headroom/build/deadline.h"

#include <algorithm>
#include <climits>
#include <memory>
#include <unordered_set>
#include <utility>
#include <vector>

namespace headroom {

namespace {

constexpr int64_t kMinGraceMs = 1000;
constexpr int64_t kMaxGraceMs = 60 * 1000;
// Summing each target's inputs visits an edge once per target that needs it; past this many visits targets are
// ranked by manifest order instead (a build of thousands of executables over one large library).
constexpr size_t kMaxTargetVisits = 4'000'000;

EdgeWeight UnitCost(const Edge* edge) { return {edge->is_phony() ? 0 : 1, false}; }

}  // namespace

Deadline::Deadline(int64_t at_ms, int64_t grace_ms, PredictFn predict)
    : at_ms_(at_ms), grace_ms_(std::max<int64_t>(grace_ms, 0)), predict_(std::move(predict)) {}

int64_t Deadline::DefaultGraceMs(int64_t budget_ms) { return std::clamp(budget_ms / 100, kMinGraceMs, kMaxGraceMs); }

int64_t Deadline::PredictedMs(const Edge* edge) {
  if (edge->is_phony()) return 0;
  auto [it, inserted] = predicted_.try_emplace(edge, -1);
  if (inserted && predict_) it->second = std::max<int64_t>(predict_(edge), -1);
  if (it->second >= 0) return it->second;
  // Nothing known about this job: it counts as the typical job of this build so far.
  return finished_jobs_ ? finished_total_ms_ / finished_jobs_ : 0;
}

int64_t Deadline::ChainMs(const Edge* start) {
  if (auto it = chain_.find(start); it != chain_.end()) return it->second;
  // Post-order over the edges waiting for `start` (iterative: chains can be long), each summed once.
  std::vector<std::pair<const Edge*, bool>> stack{{start, false}};
  while (!stack.empty()) {
    auto [edge, expanded] = stack.back();
    stack.pop_back();
    if (chain_.count(edge)) continue;
    if (!expanded) {
      stack.push_back({edge, true});
      for (const Node* output : edge->outputs)
        for (const Edge* next : output->out_edges)
          if (!next->outputs_ready && !chain_.count(next)) stack.push_back({next, false});
      continue;
    }
    int64_t longest_after = 0;
    for (const Node* output : edge->outputs)
      for (const Edge* next : output->out_edges)
        if (!next->outputs_ready)
          if (auto it = chain_.find(next); it != chain_.end()) longest_after = std::max(longest_after, it->second);
    chain_[edge] = PredictedMs(edge) + longest_after;
  }
  return chain_[start];
}

std::function<EdgeWeight(const Edge*)> Deadline::TargetsFirst(const std::vector<const Edge*>& wanted,
                                                                std::function<EdgeWeight(const Edge*)> base,
                                                                int parallelism, int64_t now_ms) {
  if (!base) base = UnitCost;
  const std::unordered_set<const Edge*> in_build(wanted.begin(), wanted.end());
  int64_t total_ms = 0;
  for (const Edge* edge : wanted) total_ms += PredictedMs(edge);
  if (total_ms / std::clamp(parallelism, 1, 4096) <= at_ms_ - now_ms) return base;

  std::vector<const Edge*> targets;
  for (const Edge* edge : wanted) {
    bool consumed = false;
    for (const Node* output : edge->outputs)
      for (const Edge* next : output->out_edges) consumed = consumed || in_build.count(next);
    if (!consumed) targets.push_back(edge);
  }
  // Each target's own work: the wanted edges it needs (through phony edges), predicted.
  std::unordered_map<const Edge*, int64_t> work;
  size_t visits = 0;
  for (const Edge* target : targets) {
    std::unordered_set<const Edge*> seen{target};
    std::vector<const Edge*> stack{target};
    int64_t sum = 0;
    while (!stack.empty() && visits < kMaxTargetVisits) {
      const Edge* edge = stack.back();
      stack.pop_back();
      ++visits;
      if (in_build.count(edge)) sum += PredictedMs(edge);
      for (const Node* input : edge->inputs)
        if (const Edge* producer = input->in_edge; producer && (in_build.count(producer) || producer->is_phony()))
          if (seen.insert(producer).second) stack.push_back(producer);
    }
    work[target] = sum;
  }
  const bool ranked_by_work = visits < kMaxTargetVisits;
  std::stable_sort(targets.begin(), targets.end(), [&](const Edge* a, const Edge* b) {
    return ranked_by_work && work[a] != work[b] ? work[a] < work[b] : a->id < b->id;
  });
  // The bonus step outweighs any chain of plain costs, so the rank decides first and the critical path second.
  auto costs = std::make_shared<std::unordered_map<const Edge*, EdgeWeight>>();
  int64_t step = 1;
  for (const Edge* edge : wanted) {
    const EdgeWeight weight = base(edge);
    (*costs)[edge] = weight;
    step += std::max<int64_t>(weight.cost, 0);
  }
  auto bonus = std::make_shared<std::unordered_map<const Edge*, int64_t>>();
  const int64_t ranks = static_cast<int64_t>(targets.size());
  if (ranks > 0 && step > INT64_MAX / 4 / ranks) return base;  // costs too large to stack: keep the usual order
  for (int64_t rank = 0; rank < ranks; ++rank) (*bonus)[targets[static_cast<size_t>(rank)]] = (ranks - rank) * step;
  return [base, costs, bonus](const Edge* edge) {
    auto known = costs->find(edge);
    EdgeWeight weight = known != costs->end() ? known->second : base(edge);
    if (auto it = bonus->find(edge); it != bonus->end()) weight.cost += it->second;
    return weight;
  };
}

bool Deadline::MayStart(const Edge* edge, int64_t now_ms) {
  if (edge->is_phony()) return true;
  if (now_ms < at_ms_ && now_ms + PredictedMs(edge) <= at_ms_) return true;
  refused_any_ = true;
  return false;
}

bool Deadline::ChainFits(const Edge* edge, int64_t now_ms) {
  return edge->is_phony() || now_ms + ChainMs(edge) <= at_ms_;
}

bool Deadline::MayFinishInGrace(const Edge* edge, int64_t start_ms) {
  return start_ms + PredictedMs(edge) <= at_ms_ + grace_ms_;
}

int64_t Deadline::MsUntilNextCheck(int64_t now_ms) const {
  if (now_ms < at_ms_) return at_ms_ - now_ms;
  return std::max<int64_t>(at_ms_ + grace_ms_ - now_ms, 0);
}

void Deadline::JobFinished(int64_t duration_ms) {
  finished_total_ms_ += std::max<int64_t>(duration_ms, 0);
  ++finished_jobs_;
}

}  // namespace headroom
