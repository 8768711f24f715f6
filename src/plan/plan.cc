// The plan: wanted edges, readiness, pools, restat cleaning, mid-build dyndep loading and
// critical-path priorities (ninja 1.12+ semantics).
#include "headroom/plan/plan.h"

#include <algorithm>
#include <unordered_set>

#include "headroom/plan/critical_path.h"
#include "headroom/scan/scan.h"
#include "headroom/util/metrics.h"

namespace headroom {

namespace {

// Post-order over the edges reachable from the targets: producers come before their consumers.
void TopologicalVisit(const Node* node, std::unordered_set<Edge*>* seen, std::vector<Edge*>* order) {
  Edge* edge = node->in_edge;
  if (!edge || !seen->insert(edge).second) return;
  for (const Node* input : edge->inputs) TopologicalVisit(input, seen, order);
  order->push_back(edge);
}

EdgeWeight UnitCost(const Edge* edge) { return {edge->is_phony() ? 0 : 1, false}; }

}  // namespace

bool Plan::AnyWantedCommandEdge(const std::function<bool(const Edge*)>& test) const {
  for (const auto& [edge, want] : want_) {
    if (want != Want::kNothing && !edge->is_phony() && test(edge)) return true;
  }
  return false;
}

void Plan::Reset() {
  want_.clear();
  ready_.clear();
  delayed_.clear();
  targets_.clear();
  command_edges_ = 0;
  wanted_edges_ = 0;
}

bool Plan::AddTarget(const Node* target, std::string* err) {
  targets_.push_back(target);
  return AddSubTarget(target, nullptr, err, nullptr);
}

bool Plan::AddSubTarget(const Node* node, const Node* dependent, std::string* err, std::set<Edge*>* dyndep_walk) {
  Edge* edge = node->in_edge;
  if (!edge) {
    // A leaf. Dirty means missing; that is fatal only for files the manifest itself names,
    // not for headers a depfile or dyndep file mentioned.
    if (node->dirty && !node->generated_by_dep_loader) {
      std::string needed_by = dependent ? ", needed by '" + dependent->path + "'," : "";
      *err = "'" + node->path + "'" + needed_by + " missing and no known rule to make it";
    }
    return false;
  }
  if (edge->outputs_ready) return false;  // up to date: nothing to do

  auto [it, inserted] = want_.emplace(edge, Want::kNothing);
  if (dyndep_walk && it->second == Want::kToFinish) return false;  // already running or done
  if (node->dirty && it->second == Want::kNothing) {
    it->second = Want::kToStart;
    EdgeWanted(edge);
  }
  if (dyndep_walk) dyndep_walk->insert(edge);
  if (!inserted) return true;  // inputs already visited

  for (const Node* input : edge->inputs) {
    if (!AddSubTarget(input, node, err, dyndep_walk) && !err->empty()) return false;
  }
  return true;
}

void Plan::EdgeWanted(const Edge* edge) {
  ++wanted_edges_;
  if (!edge->is_phony()) {
    ++command_edges_;
    if (plan_size_observer_) plan_size_observer_(edge, true);
  }
}

void Plan::PrepareQueue(const std::function<EdgeWeight(const Edge*)>& edge_weight) {
  ComputeCriticalPath(edge_weight ? edge_weight : UnitCost);
  ScheduleInitialEdges();
}

void Plan::ComputeCriticalPath(const std::function<EdgeWeight(const Edge*)>& edge_weight) {
  ScopedMetric metric = TimeScope("ComputeCriticalPath");
  std::unordered_set<Edge*> seen;
  std::vector<Edge*> order;
  for (const Node* target : targets_) TopologicalVisit(target, &seen, &order);
  // Each edge's cost is asked for once and kept by edge id (ids are dense: the manifest's order), so the
  // exclusive edges' chain can be summed before any weight is accumulated.
  size_t id_count = 0;
  for (const Edge* edge : order) id_count = std::max(id_count, edge->id + 1);
  std::vector<int64_t> costs(id_count, 0);
  std::vector<bool> exclusive(id_count, false);
  for (const Edge* edge : order) {
    EdgeWeight weight = edge_weight(edge);
    costs[edge->id] = weight.cost;
    exclusive[edge->id] = weight.exclusive;
  }
  ChainExclusiveCosts(costs, exclusive);
  AccumulateCriticalPath(
      order, [&](const Edge* edge) { return costs[edge->id]; },
      [](const Edge* edge, const auto& visit) {
        for (const Node* input : edge->inputs) {
          if (input->in_edge) visit(input->in_edge);
        }
      },
      [](Edge* edge) -> int64_t& { return edge->critical_path_weight; });
}

void Plan::ScheduleInitialEdges() {
  std::set<Pool*> pools_to_release;
  for (auto it = want_.begin(); it != want_.end(); ++it) {
    Edge* edge = it->first;
    if (it->second != Want::kToStart || !edge->AllInputsReady()) continue;
    if (edge->pool->ShouldDelayEdge()) {
      it->second = Want::kToFinish;
      delayed_[edge->pool].insert(edge);
      pools_to_release.insert(edge->pool);
    } else {
      ScheduleWork(it);
    }
  }
  // Released once at the end so a pool hands out its highest-priority edges, not the first found.
  for (Pool* pool : pools_to_release) ReleasePoolEdges(pool);
}

void Plan::ScheduleWork(WantMap::iterator want_e) {
  if (want_e->second == Want::kToFinish) return;  // already scheduled (shared order-only input, etc.)
  want_e->second = Want::kToFinish;
  Edge* edge = want_e->first;
  Pool* pool = edge->pool;
  if (pool->ShouldDelayEdge()) {
    delayed_[pool].insert(edge);
    ReleasePoolEdges(pool);
  } else {
    ++pool->current_use;
    ready_.insert(edge);
  }
}

void Plan::ReleasePoolEdges(Pool* pool) {
  auto it = delayed_.find(pool);
  if (it == delayed_.end()) return;
  auto& waiting = it->second;
  while (!waiting.empty() && pool->current_use + 1 <= pool->depth) {
    Edge* edge = *waiting.begin();
    waiting.erase(waiting.begin());
    ++pool->current_use;
    ready_.insert(edge);
  }
}

Edge* Plan::FindWork(const std::function<bool(Edge*)>& admit) {
  for (auto it = ready_.begin(); it != ready_.end(); ++it) {
    Edge* edge = *it;
    if (admit && !admit(edge)) continue;
    ready_.erase(it);
    return edge;
  }
  return nullptr;
}

void Plan::Requeue(Edge* edge) { ready_.insert(edge); }

bool Plan::EdgeFinished(Edge* edge, EdgeResult result, std::string* err) {
  auto want_e = want_.find(edge);
  const bool directly_wanted = want_e != want_.end() && want_e->second != Want::kNothing;
  if (directly_wanted) --edge->pool->current_use;
  ReleasePoolEdges(edge->pool);

  if (result != EdgeResult::kSucceeded) return true;
  if (directly_wanted) --wanted_edges_;
  if (want_e != want_.end()) want_.erase(want_e);
  edge->outputs_ready = true;

  for (Node* output : edge->outputs) {
    if (!NodeFinished(output, err)) return false;
  }
  return true;
}

bool Plan::NodeFinished(Node* node, std::string* err) {
  if (node->dyndep_pending) {
    // The dyndep file is now up to date: load it, which updates the plan and schedules new work.
    if (!load_dyndeps_) {
      *err = "dyndep file '" + node->path + "' cannot be loaded here";
      return false;
    }
    return load_dyndeps_(node, err);
  }
  for (Edge* out_edge : node->out_edges) {
    auto want_e = want_.find(out_edge);
    if (want_e == want_.end()) continue;
    if (!EdgeMaybeReady(want_e, err)) return false;
  }
  return true;
}

bool Plan::EdgeMaybeReady(WantMap::iterator want_e, std::string* err) {
  Edge* edge = want_e->first;
  if (!edge->AllInputsReady()) return true;
  if (want_e->second != Want::kNothing) {
    ScheduleWork(want_e);
    return true;
  }
  // Not needed itself, but something downstream may be waiting on it.
  return EdgeFinished(edge, EdgeResult::kSucceeded, err);
}

bool Plan::CleanNode(DependencyScan* scan, Node* node, std::string* err) {
  node->dirty = false;
  for (Edge* out_edge : node->out_edges) {
    auto want_e = want_.find(out_edge);
    if (want_e == want_.end() || want_e->second == Want::kNothing) continue;
    if (out_edge->deps_missing) continue;  // it must run to regenerate its deps

    auto begin = out_edge->inputs.begin();
    auto end = out_edge->inputs.end() - out_edge->order_only_deps;
    if (std::any_of(begin, end, [](const Node* in) { return in->dirty; })) continue;

    Node* most_recent_input = nullptr;
    for (auto it = begin; it != end; ++it) {
      if (!most_recent_input || (*it)->mtime > most_recent_input->mtime) most_recent_input = *it;
    }
    bool outputs_dirty = false;
    if (!scan->RecomputeOutputsDirty(out_edge, most_recent_input, &outputs_dirty, err)) return false;
    if (outputs_dirty) continue;

    for (Node* output : out_edge->outputs) {
      if (!CleanNode(scan, output, err)) return false;
    }
    want_e->second = Want::kNothing;
    --wanted_edges_;
    if (!out_edge->is_phony()) {
      --command_edges_;
      if (plan_size_observer_) plan_size_observer_(out_edge, false);
    }
  }
  return true;
}

bool Plan::DyndepsLoaded(DependencyScan* scan, const Node* node, const DyndepFile& ddf, std::string* err) {
  if (!RefreshDyndepDependents(scan, node, err)) return false;

  // Edges with new dyndep information that the plan already holds are where newly reachable
  // parts of the graph hang off; walk from their new implicit inputs.
  std::set<Edge*> dyndep_walk;
  for (const auto& [edge, dyndeps] : ddf) {
    if (edge->outputs_ready || want_.find(edge) == want_.end()) continue;
    for (const Node* input : dyndeps.implicit_inputs) {
      if (!AddSubTarget(input, edge->outputs[0], err, &dyndep_walk) && !err->empty()) return false;
    }
  }
  // The dyndep node's own consumers, as NodeFinished would have handled them.
  for (Edge* out_edge : node->out_edges) {
    if (want_.find(out_edge) != want_.end()) dyndep_walk.insert(out_edge);
  }
  for (Edge* edge : dyndep_walk) {
    auto want_e = want_.find(edge);
    if (want_e == want_.end()) continue;
    if (!EdgeMaybeReady(want_e, err)) return false;
  }
  return true;
}

bool Plan::RefreshDyndepDependents(DependencyScan* scan, const Node* node, std::string* err) {
  std::set<Node*> dependents;
  UnmarkDependents(node, &dependents);
  for (Node* dependent : dependents) {
    std::vector<Node*> validation_nodes;
    if (!scan->RecomputeDirty(dependent, &validation_nodes, err)) return false;
    for (Node* validation : validation_nodes) {
      if (Edge* in_edge = validation->in_edge) {
        if (!in_edge->outputs_ready && !AddTarget(validation, err) && !err->empty()) return false;
      }
    }
    if (!dependent->dirty) continue;
    // Known dirty only now that the dyndep file told us more: want its edge after all.
    auto want_e = want_.find(dependent->in_edge);
    if (want_e != want_.end() && want_e->second == Want::kNothing) {
      want_e->second = Want::kToStart;
      EdgeWanted(dependent->in_edge);
    }
  }
  return true;
}

void Plan::UnmarkDependents(const Node* node, std::set<Node*>* dependents) {
  for (Edge* edge : node->out_edges) {
    if (want_.find(edge) == want_.end()) continue;
    if (edge->mark == Edge::kVisitNone) continue;
    edge->mark = Edge::kVisitNone;
    for (Node* output : edge->outputs) {
      if (dependents->insert(output).second) UnmarkDependents(output, dependents);
    }
  }
}

}  // namespace headroom
