// The build graph: interned file nodes, edges (build statements), pools, and State which owns them.
// Everything else (parser, scan, plan, logs, tools) reads and annotates this model.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "headroom/graph/eval_env.h"
#include "headroom/util/flat_index.h"
#include "headroom/util/timestamp.h"

namespace headroom {

struct Edge;
struct Pool;

// One file path. Paths are canonical (lexically normalised) and interned in State.
struct Node {
  Node(std::string path, int index) : path(std::move(path)), index(index) {}

  const std::string path;
  const int index;  // creation order within State; stable for the life of the State.

  enum class Existence : uint8_t { kUnknown, kMissing, kExists };

  // mtime is kept apart from existence because a missing phony output borrows its newest input's
  // mtime (so dependents compare against it) while still not existing.
  TimeStamp mtime = -1;
  Existence existence = Existence::kUnknown;
  bool exists() const { return existence == Existence::kExists; }
  bool status_known() const { return existence != Existence::kUnknown; }
  // Records a DiskInterface::Stat result (-1 = error leaves the status unknown).
  void SetMtimeFromStat(TimeStamp stat_result) {
    mtime = stat_result;
    existence = stat_result > 0 ? Existence::kExists : stat_result == 0 ? Existence::kMissing : Existence::kUnknown;
  }
  void MarkMissing() { SetMtimeFromStat(0); }
  void UpdatePhonyMtime(TimeStamp newest_input) {
    if (!exists() && newest_input > mtime) mtime = newest_input;
  }
  void ResetState() {
    mtime = -1;
    existence = Existence::kUnknown;
    dirty = false;
  }

  bool dirty = false;
  bool dyndep_pending = false;  // this node is a dyndep file some edge still has to load.
  bool generated_by_dep_loader = true;  // true until some manifest statement names it.
  int deps_log_id = -1;  // record id in .ninja_deps, -1 when not recorded there.

  Edge* in_edge = nullptr;  // the edge producing this node, if any.
  std::vector<Edge*> out_edges;  // edges that use this node as an input.
  std::vector<Edge*> validation_out_edges;  // edges that list this node as a validation.
};

// One `build` statement.
struct Edge {
  enum VisitMark { kVisitNone, kVisitInStack, kVisitDone };

  const Rule* rule = nullptr;
  Pool* pool = nullptr;
  BindingEnv* env = nullptr;
  size_t id = 0;  // manifest order; ties in the ready queue go to the lower id.

  // inputs = explicit, then implicit_deps implicit, then order_only_deps order-only.
  std::vector<Node*> inputs;
  // outputs = explicit, then implicit_outs implicit.
  std::vector<Node*> outputs;
  std::vector<Node*> validations;
  int implicit_deps = 0;
  int order_only_deps = 0;
  int implicit_outs = 0;

  Node* dyndep = nullptr;  // the dyndep file node, when the `dyndep` binding is set.

  VisitMark mark = kVisitNone;
  bool outputs_ready = false;
  bool deps_loaded = false;
  bool deps_missing = false;
  bool generated_by_dep_loader = false;
  TimeStamp command_start_time = 0;  // filesystem time at command start (log v6+).
  int64_t critical_path_weight = -1;  // plan priority; higher runs first.

  // Evaluates the command; with `incl_rsp_file` the rspfile content is appended as the log hash needs it.
  std::string EvaluateCommand(bool incl_rsp_file = false) const;
  // Evaluates a binding in this edge's scope ($in, $out, $in_newline available, shell-quoted).
  std::string GetBinding(const std::string& key) const;
  bool GetBindingBool(const std::string& key) const;  // non-empty means true.
  // Binding values that name files are evaluated without shell quoting of $in/$out.
  std::string GetUnescapedDepfile() const;
  std::string GetUnescapedDyndep() const;
  std::string GetUnescapedRspfile() const;

  bool is_phony() const;
  bool use_console() const;
  bool maybe_phonycycle_diagnostic() const;
  bool AllInputsReady() const;

  bool is_implicit(size_t index) const {
    return index >= inputs.size() - order_only_deps - implicit_deps && !is_order_only(index);
  }
  bool is_order_only(size_t index) const { return index >= inputs.size() - order_only_deps; }
  bool is_implicit_out(size_t index) const { return index >= outputs.size() - implicit_outs; }
  size_t explicit_input_count() const { return inputs.size() - implicit_deps - order_only_deps; }
  size_t explicit_output_count() const { return outputs.size() - implicit_outs; }
};

// A pool limits how many of its edges run at once; depth 0 = unlimited.
struct Pool {
  Pool(std::string name, int depth) : name(std::move(name)), depth(depth) {}
  const std::string name;
  const int depth;
  int current_use = 0;

  bool is_limited() const { return depth > 0; }
  bool ShouldDelayEdge() const { return depth != 0; }
};

// The key State interns nodes under.
struct NodePath {
  std::string_view operator()(const Node& node) const { return node.path; }
};
using PathIndex = FlatIndex<Node, NodePath>;

// Owns the whole graph of one loaded manifest.
class State {
 public:
  static Pool kDefaultPool;
  static Pool kConsolePool;
  static const Rule kPhonyRule;

  State();
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  void AddPool(std::unique_ptr<Pool> pool);
  Pool* LookupPool(const std::string& name);

  Edge* AddEdge(const Rule* rule);

  // Interns `path` (must already be canonical).
  Node* GetNode(std::string_view path);
  Node* LookupNode(std::string_view path) const;
  // Closest known path by edit distance, for "did you mean" hints.
  Node* SpellcheckNode(const std::string& path) const;

  // Wires a node into an edge. AddOut fails (returns false, sets err) if the node already has an in-edge.
  void AddIn(Edge* edge, std::string_view path);
  bool AddOut(Edge* edge, std::string_view path, std::string* err);
  void AddValidation(Edge* edge, std::string_view path);
  bool AddDefault(std::string_view path, std::string* err);

  // Outputs that feed no edge; error when there are none although edges exist.
  std::vector<Node*> RootNodes(std::string* err) const;
  std::vector<Node*> DefaultNodes(std::string* err) const;

  // Forgets all stat and dirty state so the same graph can be scanned again.
  void Reset();

  // For a process about to exit: gives the nodes, edges and scopes to storage that is never freed (still
  // reachable, so leak checkers do not report it) and leaves this State empty. Freeing a large graph node by
  // node costs about a quarter of loading it (86,883 edges: ~60 of a 230 ms `-t targets`); ninja never frees
  // its graph either, it exits without teardown.
  void AbandonGraphAtExit();

  BindingEnv bindings;  // the top-level file scope.
  std::vector<std::unique_ptr<Edge>> edges;
  std::vector<Node*> defaults;
  std::map<std::string, std::unique_ptr<Pool>> pools;

  // Scopes of subninjas and edges with their own bindings; owned here so pointers stay valid.
  BindingEnv* NewScope(BindingEnv* parent);

  const std::deque<Node>& nodes() const { return nodes_; }
  size_t node_count() const { return nodes_.size(); }
  size_t path_buckets() const { return paths_.bucket_count(); }  // -d stats reports the table's load.

 private:
  std::deque<Node> nodes_;  // deque: stable addresses, no per-node allocation.
  PathIndex paths_;  // keyed by nodes_[i].path.
  std::vector<std::unique_ptr<BindingEnv>> scopes_;
};

}  // namespace headroom
