// The plan: which edges this build wants, which are ready, and in what priority order.
// The ready set is ordered (critical-path weight, then manifest order) and can be walked so an
// admission policy may pick a later edge when the head one has to wait (the memory seam).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "headroom/graph/graph.h"
#include "headroom/manifest/dyndep_parser.h"
#include "headroom/plan/critical_path.h"

namespace headroom {

class DependencyScan;

// Highest weight first; equal weights in manifest order.
struct EdgePriorityOrder {
  bool operator()(const Edge* a, const Edge* b) const {
    if (a->critical_path_weight != b->critical_path_weight) return a->critical_path_weight > b->critical_path_weight;
    return a->id < b->id;
  }
};

class Plan {
 public:
  enum class EdgeResult { kFailed, kSucceeded };

  // Adds `target` and everything it needs that is dirty. false with empty *err: nothing to do.
  bool AddTarget(const Node* target, std::string* err);
  // Computes priorities and queues the edges whose inputs are ready; call once after AddTarget.
  // `edge_weight` gives each edge's weight on the critical path (default: 1 per command edge, none exclusive).
  void PrepareQueue(const std::function<EdgeWeight(const Edge*)>& edge_weight = {});

  // Removes and returns the first ready edge `admit` accepts (walking in priority order), or null.
  Edge* FindWork(const std::function<bool(Edge*)>& admit = {});
  bool EdgeFinished(Edge* edge, EdgeResult result, std::string* err);
  // Puts a started edge back into the ready set (a requeued job after an OOM kill).
  void Requeue(Edge* edge);
  // A restat edge left `node` unchanged: drop dependents that no longer need to run.
  bool CleanNode(DependencyScan* scan, Node* node, std::string* err);
  // A dyndep file was loaded mid-build: bring the affected edges into the plan.
  bool DyndepsLoaded(DependencyScan* scan, const Node* node, const DyndepFile& ddf, std::string* err);

  // How a dyndep file becomes loaded when its producing edge finishes (the builder supplies it).
  void set_dyndep_loader(std::function<bool(Node*, std::string*)> loader) { load_dyndeps_ = std::move(loader); }
  // Told whenever a command edge enters or leaves the plan (status %t, ETA).
  void set_plan_size_observer(std::function<void(const Edge*, bool added)> observer) {
    plan_size_observer_ = std::move(observer);
  }

  bool more_to_do() const { return wanted_edges_ > 0 && command_edges_ > 0; }
  // Whether `test` holds for a command edge the plan still wants to run (stops at the first that does).
  bool AnyWantedCommandEdge(const std::function<bool(const Edge*)>& test) const;
  int command_edge_count() const { return command_edges_; }
  size_t ready_count() const { return ready_.size(); }
  const std::set<Edge*, EdgePriorityOrder>& ready() const { return ready_; }
  void Reset();

 private:
  enum class Want { kNothing, kToStart, kToFinish };

  using WantMap = std::unordered_map<Edge*, Want>;
  bool EdgeMaybeReady(WantMap::iterator want_e, std::string* err);
  void ScheduleWork(WantMap::iterator want_e);
  bool AddSubTarget(const Node* node, const Node* dependent, std::string* err,
                    std::set<Edge*>* dyndep_walk);
  bool NodeFinished(Node* node, std::string* err);
  void EdgeWanted(const Edge* edge);
  bool RefreshDyndepDependents(DependencyScan* scan, const Node* node, std::string* err);
  void UnmarkDependents(const Node* node, std::set<Node*>* dependents);
  void ComputeCriticalPath(const std::function<EdgeWeight(const Edge*)>& edge_weight);
  void ScheduleInitialEdges();
  // Pools with a depth hold their edges back until a slot frees.
  void ReleasePoolEdges(Pool* pool);

  WantMap want_;
  std::function<bool(Node*, std::string*)> load_dyndeps_;
  std::function<void(const Edge*, bool)> plan_size_observer_;
  std::set<Edge*, EdgePriorityOrder> ready_;
  std::map<Pool*, std::set<Edge*, EdgePriorityOrder>> delayed_;
  std::vector<const Node*> targets_;
  int command_edges_ = 0;  // wanted edges that run a command (not phony)
  int wanted_edges_ = 0;   // edges we still want to run
};

}  // namespace headroom
