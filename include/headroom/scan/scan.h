// Dirty checking as ninja 1.13.2 does it: stats nodes once, loads deps (depfile or .ninja_deps) and
// dyndep files, compares mtimes and command hashes, and marks what must rebuild.
#pragma once

#include <string>
#include <vector>

#include "headroom/graph/graph.h"
#include "headroom/manifest/dyndep_parser.h"
#include "headroom/scan/explanations.h"

namespace headroom {

class BuildLog;
class ContentHashes;
class DepsLog;
class DiskInterface;

// Loads an edge's discovered dependencies (deps = gcc|msvc from .ninja_deps, else its depfile)
// and splices them into the edge as implicit inputs.
class ImplicitDepLoader {
 public:
  ImplicitDepLoader(State* state, DepsLog* deps_log, DiskInterface* disk, Explanations* explanations)
      : state_(state), deps_log_(deps_log), disk_(disk), explanations_(explanations) {}

  // false with empty *err: deps are missing or stale, so the edge is dirty; false with *err: error.
  bool LoadDeps(Edge* edge, std::string* err);
  // --content-hash: a .ninja_deps record older than its output (a build dir restored without its mtimes) is
  // still spliced in, and LoadDeps says so through loaded_stale(), so that unchanged contents can vouch for it.
  void set_load_stale_deps(bool load) { load_stale_deps_ = load; }
  bool loaded_stale() const { return loaded_stale_; }

 private:
  bool LoadDepFile(Edge* edge, const std::string& path, std::string* err);
  bool LoadDepsFromLog(Edge* edge, std::string* err);
  // Makes room for `count` implicit inputs before the order-only ones; returns the insertion point.
  std::vector<Node*>::iterator PreallocateSpace(Edge* edge, int count);

  State* state_;
  DepsLog* deps_log_;
  DiskInterface* disk_;
  OptionalExplanations explanations_;
  bool load_stale_deps_ = false;
  bool loaded_stale_ = false;
};

// Applies dyndep files to the graph.
class DyndepLoader {
 public:
  DyndepLoader(State* state, DiskInterface* disk, Explanations* explanations)
      : state_(state), disk_(disk), explanations_(explanations) {}
  bool LoadDyndeps(Node* node, std::string* err) const;
  bool LoadDyndeps(Node* node, DyndepFile* ddf, std::string* err) const;

 private:
  bool UpdateEdge(Edge* edge, const Dyndeps& dyndeps, std::string* err) const;

  State* state_;
  DiskInterface* disk_;
  mutable OptionalExplanations explanations_;
};

class DependencyScan {
 public:
  DependencyScan(State* state, BuildLog* build_log, DepsLog* deps_log, DiskInterface* disk,
                 Explanations* explanations = nullptr)
      : build_log_(build_log),
        disk_(disk),
        dep_loader_(state, deps_log, disk, explanations),
        dyndep_loader_(state, disk, explanations),
        explanations_(explanations) {}

  // Marks `node` and everything it needs dirty or clean; validation targets found are appended.
  bool RecomputeDirty(Node* node, std::vector<Node*>* validation_nodes, std::string* err);
  // Whether any output of `edge` is out of date given its newest input.
  bool RecomputeOutputsDirty(Edge* edge, Node* most_recent_input, bool* outputs_dirty, std::string* err);

  bool LoadDyndeps(Node* node, std::string* err) const { return dyndep_loader_.LoadDyndeps(node, err); }
  bool LoadDyndeps(Node* node, DyndepFile* ddf, std::string* err) const {
    return dyndep_loader_.LoadDyndeps(node, ddf, err);
  }

  BuildLog* build_log() const { return build_log_; }
  void set_build_log(BuildLog* log) { build_log_ = log; }
  // --content-hash: edges dirty only by mtimes are clean when their contents are (content_hashes.h).
  void set_content_hashes(ContentHashes* hashes) {
    content_hashes_ = hashes;
    dep_loader_.set_load_stale_deps(hashes != nullptr);
  }
  Explanations* explanations() const { return explanations_.get(); }

 private:
  bool RecomputeNodeDirty(Node* node, std::vector<Node*>* stack, std::vector<Node*>* validation_nodes,
                          std::string* err);
  bool RecomputeEdgeDirty(Edge* edge, std::vector<Node*>* stack, std::vector<Node*>* validation_nodes,
                          std::string* err);
  bool VerifyDAG(Node* node, std::vector<Node*>* stack, std::string* err);
  bool StatIfNecessary(Node* node, std::string* err);
  bool RecomputeOutputDirty(const Edge* edge, const Node* most_recent_input, const std::string& command,
                            Node* output);

  BuildLog* build_log_;
  ContentHashes* content_hashes_ = nullptr;
  DiskInterface* disk_;
  ImplicitDepLoader dep_loader_;
  DyndepLoader dyndep_loader_;
  OptionalExplanations explanations_;
};

}  // namespace headroom
