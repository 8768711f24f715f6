// Dirty checking: the depth-first walk that decides what must rebuild, with ninja 1.13.2's rules.
#include "headroom/scan/scan.h"

#include <deque>

#include "headroom/logs/build_log.h"
#include "headroom/scan/content_hashes.h"
#include "headroom/util/disk.h"

namespace headroom {

bool DependencyScan::RecomputeDirty(Node* initial_node, std::vector<Node*>* validation_nodes, std::string* err) {
  // Validations found while visiting become extra roots to visit afterwards, never inputs:
  // visiting them inline could report a false cycle when a validation depends on its requester.
  std::deque<Node*> pending{initial_node};
  std::vector<Node*> stack;
  std::vector<Node*> found_validations;
  while (!pending.empty()) {
    Node* node = pending.front();
    pending.pop_front();
    stack.clear();
    found_validations.clear();
    if (!RecomputeNodeDirty(node, &stack, &found_validations, err)) return false;
    pending.insert(pending.end(), found_validations.begin(), found_validations.end());
    if (validation_nodes)
      validation_nodes->insert(validation_nodes->end(), found_validations.begin(), found_validations.end());
  }
  return true;
}

bool DependencyScan::StatIfNecessary(Node* node, std::string* err) {
  if (node->status_known()) return true;
  node->SetMtimeFromStat(disk_->Stat(node->path, err));
  return node->status_known();
}

bool DependencyScan::RecomputeNodeDirty(Node* node, std::vector<Node*>* stack, std::vector<Node*>* validation_nodes,
                                        std::string* err) {
  Edge* edge = node->in_edge;
  if (!edge) {
    // A source file: dirty exactly when it is missing.
    if (node->status_known()) return true;
    if (!StatIfNecessary(node, err)) return false;
    if (!node->exists()) explanations_.Record(node, "{} has no in-edge and is missing", node->path);
    node->dirty = !node->exists();
    return true;
  }
  if (edge->mark == Edge::kVisitDone) return true;
  if (!VerifyDAG(node, stack, err)) return false;

  edge->mark = Edge::kVisitInStack;
  stack->push_back(node);
  if (!RecomputeEdgeDirty(edge, stack, validation_nodes, err)) return false;
  edge->mark = Edge::kVisitDone;
  stack->pop_back();
  return true;
}

bool DependencyScan::RecomputeEdgeDirty(Edge* edge, std::vector<Node*>* stack, std::vector<Node*>* validation_nodes,
                                        std::string* err) {
  Node* node = stack->back();
  bool dirty = false;
  edge->outputs_ready = true;
  edge->deps_missing = false;

  if (!edge->deps_loaded && edge->dyndep && edge->dyndep->dyndep_pending) {
    // First visit of an edge with a dyndep file: if the file is already up to date, load it now so
    // the extra inputs and outputs it declares take part in this scan. Otherwise the edge cannot
    // be ready yet (the file is one of its inputs) and the builder loads it once it is built.
    if (!RecomputeNodeDirty(edge->dyndep, stack, validation_nodes, err)) return false;
    if (!edge->dyndep->in_edge || edge->dyndep->in_edge->outputs_ready) {
      if (!LoadDyndeps(edge->dyndep, err)) return false;
    }
  }

  // Output mtimes are needed below and by the deps log's staleness check.
  for (Node* output : edge->outputs) {
    if (!StatIfNecessary(output, err)) return false;
  }

  bool deps_stale_but_loaded = false;
  if (!edge->deps_loaded) {
    edge->deps_loaded = true;
    if (!dep_loader_.LoadDeps(edge, err)) {
      if (!err->empty()) return false;
      // No usable dependency information: rebuilding regenerates it.
      dirty = edge->deps_missing = true;
      deps_stale_but_loaded = dep_loader_.loaded_stale();
    }
  }

  validation_nodes->insert(validation_nodes->end(), edge->validations.begin(), edge->validations.end());

  Node* most_recent_input = nullptr;
  bool inputs_dirty = false;
  for (size_t i = 0; i < edge->inputs.size(); ++i) {
    Node* input = edge->inputs[i];
    if (!RecomputeNodeDirty(input, stack, validation_nodes, err)) return false;
    if (input->in_edge && !input->in_edge->outputs_ready) edge->outputs_ready = false;
    if (edge->is_order_only(i)) continue;
    if (input->dirty) {
      explanations_.Record(node, "{} is dirty", input->path);
      dirty = inputs_dirty = true;
    } else if (!most_recent_input || input->mtime > most_recent_input->mtime) {
      most_recent_input = input;
    }
  }

  if (!dirty && !RecomputeOutputsDirty(edge, most_recent_input, &dirty, err)) return false;
  // Only the outputs' verdict (mtimes, log, command) and a deps record older than its output may be overruled,
  // and only by unchanged contents; a dirty input or missing deps never.
  const bool overrulable = !inputs_dirty && (!edge->deps_missing || deps_stale_but_loaded);
  if (content_hashes_ && overrulable) {
    if (!dirty) {
      content_hashes_->AdoptClean(edge);
    } else if (content_hashes_->ReconcileUnchanged(edge, most_recent_input)) {
      explanations_.Record(node, "contents of the inputs of {} unchanged; clean", node->path);
      dirty = edge->deps_missing = false;
    }
  }

  if (dirty) {
    for (Node* output : edge->outputs) output->dirty = true;
    // A phony edge without inputs has nothing to run, so its outputs count as ready even when dirty.
    if (!(edge->is_phony() && edge->inputs.empty())) edge->outputs_ready = false;
  }
  return true;
}

bool DependencyScan::VerifyDAG(Node* node, std::vector<Node*>* stack, std::string* err) {
  Edge* edge = node->in_edge;
  if (edge->mark != Edge::kVisitInStack) return true;

  // The edge is on the stack: report the cycle starting and ending at `node`, even when the stack
  // entered that edge through another of its outputs.
  auto start = stack->begin();
  while (start != stack->end() && (*start)->in_edge != edge) ++start;
  *start = node;

  *err = "dependency cycle: ";
  for (auto it = start; it != stack->end(); ++it) err->append((*it)->path).append(" -> ");
  err->append((*start)->path);
  if (start + 1 == stack->end() && edge->maybe_phonycycle_diagnostic()) {
    // Only reachable when the parser kept the self-reference because phonycycle=err.
    err->append(" [-w phonycycle=err]");
  }
  return false;
}

bool DependencyScan::RecomputeOutputsDirty(Edge* edge, Node* most_recent_input, bool* outputs_dirty,
                                           std::string* err) {
  std::string command = edge->EvaluateCommand(/*incl_rsp_file=*/true);
  for (Node* output : edge->outputs) {
    if (RecomputeOutputDirty(edge, most_recent_input, command, output)) {
      *outputs_dirty = true;
      return true;
    }
  }
  return true;
}

bool DependencyScan::RecomputeOutputDirty(const Edge* edge, const Node* most_recent_input,
                                          const std::string& command, Node* output) {
  if (edge->is_phony()) {
    // Phony edges run nothing; only a phony without inputs whose file is missing is dirty.
    if (edge->inputs.empty() && !output->exists()) {
      explanations_.Record(output, "output {} of phony edge with no inputs doesn't exist", output->path);
      return true;
    }
    // Dependents compare against the phony node, so give it the newest input's time.
    if (most_recent_input) output->UpdatePhonyMtime(most_recent_input->mtime);
    return false;
  }

  if (!output->exists()) {
    explanations_.Record(output, "output {} doesn't exist", output->path);
    return true;
  }

  // A restat edge with a log entry may have left an old output on purpose (its command did not
  // change it); then only the recorded time is compared with the inputs, below.
  BuildLogEntry* entry = nullptr;
  bool trust_log_over_disk = false;
  if (build_log_ && edge->GetBindingBool("restat")) {
    entry = build_log_->LookupByOutput(output->path);
    trust_log_over_disk = entry != nullptr;
  }

  if (!trust_log_over_disk && most_recent_input && output->mtime < most_recent_input->mtime) {
    explanations_.Record(output, "output {} older than most recent input {} ({} vs {})", output->path,
                         most_recent_input->path, output->mtime, most_recent_input->mtime);
    return true;
  }

  if (!build_log_) return false;
  const bool generator = edge->GetBindingBool("generator");
  if (!entry) entry = build_log_->LookupByOutput(output->path);
  if (entry) {
    // Generators (the manifest's own regeneration) are not re-run just because their command changed.
    if (!generator && build_log_->HashCommand(command) != entry->command_hash) {
      explanations_.Record(output, "command line changed for {}", output->path);
      return true;
    }
    // The recorded time can be older than the file on disk when an earlier run was interrupted
    // or failed after writing the output.
    if (most_recent_input && entry->mtime < most_recent_input->mtime) {
      explanations_.Record(output, "recorded mtime of {} older than most recent input {} ({} vs {})", output->path,
                           most_recent_input->path, entry->mtime, most_recent_input->mtime);
      return true;
    }
  } else if (!generator) {
    explanations_.Record(output, "command line not found in log for {}", output->path);
    return true;
  }
  return false;
}

}  // namespace headroom
