// Edge binding evaluation ($in, $out, shell quoting, cycle detection) and State bookkeeping.
#include "headroom/graph/graph.h"

#include <algorithm>

#include "headroom/util/messages.h"
#include "headroom/util/path.h"

namespace headroom {

Pool State::kDefaultPool("", 0);
Pool State::kConsolePool("console", 1);
const Rule State::kPhonyRule("phony");

namespace {

// Evaluates an edge's bindings: $in/$out/$in_newline from the edge, others through the scopes.
class EdgeEnv : public Env {
 public:
  enum class Escape { kShell, kNone };
  EdgeEnv(const Edge* edge, Escape escape) : edge_(edge), escape_(escape) {}

  std::string LookupVariable(const std::string& var) override {
    if (var == "in" || var == "in_newline") {
      return JoinPaths(edge_->inputs.begin(), edge_->inputs.begin() + edge_->explicit_input_count(),
                       var == "in" ? ' ' : '\n');
    }
    if (var == "out") {
      return JoinPaths(edge_->outputs.begin(), edge_->outputs.begin() + edge_->explicit_output_count(), ' ');
    }
    if (recursion_guard_active_) {
      auto it = std::find(lookups_.begin(), lookups_.end(), var);
      if (it != lookups_.end()) {
        std::string cycle;
        for (; it != lookups_.end(); ++it) cycle.append(*it).append(" -> ");
        cycle.append(var);
        Fatal("cycle in rule variables: " + cycle);
      }
    }
    const EvalString* rule_value = edge_->rule->GetBinding(var);
    const bool track = rule_value != nullptr;
    if (track) {
      recursion_guard_active_ = true;
      lookups_.push_back(var);
    }
    std::string result = edge_->env->LookupWithFallback(var, rule_value, this);
    if (track) lookups_.pop_back();
    return result;
  }

 private:
  std::string JoinPaths(std::vector<Node*>::const_iterator begin, std::vector<Node*>::const_iterator end,
                        char separator) const {
    std::string result;
    for (auto it = begin; it != end; ++it) {
      if (!result.empty()) result.push_back(separator);
      if (escape_ == Escape::kShell)
        AppendShellEscaped((*it)->path, &result);
      else
        result.append((*it)->path);
    }
    return result;
  }

  const Edge* edge_;
  Escape escape_;
  std::vector<std::string> lookups_;
  bool recursion_guard_active_ = false;
};

}  // namespace

std::string Edge::EvaluateCommand(bool incl_rsp_file) const {
  std::string command = GetBinding("command");
  if (incl_rsp_file) {
    std::string rspfile_content = GetBinding("rspfile_content");
    if (!rspfile_content.empty()) command.append(";rspfile=").append(rspfile_content);
  }
  return command;
}

std::string Edge::GetBinding(const std::string& key) const {
  EdgeEnv env(this, EdgeEnv::Escape::kShell);
  return env.LookupVariable(key);
}

bool Edge::GetBindingBool(const std::string& key) const { return !GetBinding(key).empty(); }

std::string Edge::GetUnescapedDepfile() const {
  EdgeEnv env(this, EdgeEnv::Escape::kNone);
  return env.LookupVariable("depfile");
}

std::string Edge::GetUnescapedDyndep() const {
  EdgeEnv env(this, EdgeEnv::Escape::kNone);
  return env.LookupVariable("dyndep");
}

std::string Edge::GetUnescapedRspfile() const {
  EdgeEnv env(this, EdgeEnv::Escape::kNone);
  return env.LookupVariable("rspfile");
}

bool Edge::is_phony() const { return rule == &State::kPhonyRule; }

bool Edge::use_console() const { return pool == &State::kConsolePool; }

bool Edge::maybe_phonycycle_diagnostic() const {
  // `build a: phony a` style self-references were tolerated by old ninja; only those get the hint.
  return is_phony() && outputs.size() == 1 && implicit_outs == 0 && implicit_deps == 0;
}

bool Edge::AllInputsReady() const {
  return std::all_of(inputs.begin(), inputs.end(),
                     [](const Node* in) { return !in->in_edge || in->in_edge->outputs_ready; });
}

State::State() {
  bindings.AddBuiltinRule(&kPhonyRule);
}

void State::AddPool(std::unique_ptr<Pool> pool) {
  std::string name = pool->name;
  pools[name] = std::move(pool);
}

Pool* State::LookupPool(const std::string& name) {
  if (name.empty()) return &kDefaultPool;
  if (name == kConsolePool.name) return &kConsolePool;
  auto it = pools.find(name);
  return it == pools.end() ? nullptr : it->second.get();
}

Edge* State::AddEdge(const Rule* rule) {
  auto edge = std::make_unique<Edge>();
  edge->rule = rule;
  edge->pool = &kDefaultPool;
  edge->env = &bindings;
  edge->id = edges.size();
  edges.push_back(std::move(edge));
  return edges.back().get();
}

Node* State::GetNode(std::string_view path) {
  const uint64_t hash = HashString(path);
  if (Node* existing = paths_.Find(path, hash)) return existing;
  Node& node = nodes_.emplace_back(std::string(path), static_cast<int>(nodes_.size()));
  paths_.Insert(&node, hash);
  return &node;
}

Node* State::LookupNode(std::string_view path) const {
  return paths_.Find(path);
}

Node* State::SpellcheckNode(const std::string& path) const {
  constexpr int kMaxValidEditDistance = 3;
  int best_distance = kMaxValidEditDistance + 1;
  Node* best = nullptr;
  // Creation order makes ties deterministic (the first-mentioned path wins).
  for (const Node& node : nodes_) {
    int distance = EditDistance(node.path, path, true, kMaxValidEditDistance);
    if (distance < best_distance) {
      best_distance = distance;
      best = const_cast<Node*>(&node);
    }
  }
  return best;
}

void State::AddIn(Edge* edge, std::string_view path) {
  Node* node = GetNode(path);
  node->generated_by_dep_loader = false;
  edge->inputs.push_back(node);
  node->out_edges.push_back(edge);
}

bool State::AddOut(Edge* edge, std::string_view path, std::string* err) {
  Node* node = GetNode(path);
  if (node->in_edge) {
    // ninja 1.12+ words a repeat within one edge differently from a clash between edges.
    *err = node->in_edge == edge ? node->path + " is defined as an output multiple times"
                                 : "multiple rules generate " + node->path;
    return false;
  }
  node->generated_by_dep_loader = false;
  edge->outputs.push_back(node);
  node->in_edge = edge;
  return true;
}

void State::AddValidation(Edge* edge, std::string_view path) {
  Node* node = GetNode(path);
  node->generated_by_dep_loader = false;
  edge->validations.push_back(node);
  node->validation_out_edges.push_back(edge);
}

bool State::AddDefault(std::string_view path, std::string* err) {
  Node* node = LookupNode(path);
  if (!node) {
    *err = "unknown target '" + std::string(path) + "'";
    return false;
  }
  defaults.push_back(node);
  return true;
}

std::vector<Node*> State::RootNodes(std::string* err) const {
  std::vector<Node*> roots;
  for (const auto& edge : edges) {
    for (Node* out : edge->outputs) {
      if (out->out_edges.empty()) roots.push_back(out);
    }
  }
  if (!edges.empty() && roots.empty()) *err = "could not determine root nodes of build graph";
  return roots;
}

std::vector<Node*> State::DefaultNodes(std::string* err) const { return defaults.empty() ? RootNodes(err) : defaults; }

void State::Reset() {
  for (Node& node : nodes_) node.ResetState();
  for (auto& edge : edges) {
    edge->outputs_ready = false;
    edge->deps_loaded = false;
    edge->mark = Edge::kVisitNone;
    edge->critical_path_weight = -1;
  }
}

namespace {

// What AbandonGraphAtExit gave up. Owned through a global so that it stays reachable until the process ends.
struct AbandonedGraph {
  std::deque<Node> nodes;
  std::vector<std::unique_ptr<Edge>> edges;
  std::vector<std::unique_ptr<BindingEnv>> scopes;
};
std::vector<AbandonedGraph*>* g_abandoned_graphs = nullptr;

}  // namespace

void State::AbandonGraphAtExit() {
  if (!g_abandoned_graphs) g_abandoned_graphs = new std::vector<AbandonedGraph*>;
  // Moving a deque or vector keeps its elements where they are: every Node* and Edge* stays valid.
  g_abandoned_graphs->push_back(new AbandonedGraph{std::move(nodes_), std::move(edges), std::move(scopes_)});
  nodes_.clear();
  edges.clear();
  scopes_.clear();
  paths_.Clear();
  defaults.clear();
}

BindingEnv* State::NewScope(BindingEnv* parent) {
  scopes_.push_back(std::make_unique<BindingEnv>(parent));
  return scopes_.back().get();
}

}  // namespace headroom
