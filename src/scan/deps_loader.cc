// Discovered dependencies: depfiles and .ninja_deps records spliced into edges as implicit inputs,
// and dyndep files applied to the edges that name them.
#include <algorithm>

#include "headroom/logs/deps_log.h"
#include "headroom/logs/depfile_parser.h"
#include "headroom/scan/scan.h"
#include "headroom/util/disk.h"
#include "headroom/util/path.h"

namespace headroom {

bool ImplicitDepLoader::LoadDeps(Edge* edge, std::string* err) {
  loaded_stale_ = false;
  std::string deps_type = edge->GetBinding("deps");
  if (!deps_type.empty()) return LoadDepsFromLog(edge, err);
  std::string depfile = edge->GetUnescapedDepfile();
  if (!depfile.empty()) return LoadDepFile(edge, depfile, err);
  return true;  // nothing to discover
}

std::vector<Node*>::iterator ImplicitDepLoader::PreallocateSpace(Edge* edge, int count) {
  auto position = edge->inputs.end() - edge->order_only_deps;
  position = edge->inputs.insert(position, static_cast<size_t>(count), nullptr);
  edge->implicit_deps += count;
  return position;
}

bool ImplicitDepLoader::LoadDepFile(Edge* edge, const std::string& path, std::string* err) {
  std::string content;
  std::string read_err;
  switch (disk_->ReadFile(path, &content, &read_err)) {
    case DiskInterface::ReadStatus::kOkay:
      break;
    case DiskInterface::ReadStatus::kNotFound:
      content.clear();
      break;
    case DiskInterface::ReadStatus::kOtherError:
      *err = "loading '" + path + "': " + read_err;
      return false;
  }
  // A missing or empty depfile means the edge must run to produce one.
  if (content.empty()) {
    explanations_.Record(edge->outputs[0], "depfile '{}' is missing", path);
    return false;
  }

  DepfileParser parser;
  std::string parse_err;
  if (!parser.Parse(&content, &parse_err)) {
    *err = path + ": " + parse_err;
    return false;
  }
  if (parser.outs.empty()) {
    *err = path + ": no outputs declared";
    return false;
  }

  std::vector<std::string> outs;
  for (std::string_view out : parser.outs) {
    std::string canonical(out);
    std::string canon_err;
    if (!CanonicalizePath(&canonical, &canon_err)) {
      *err = path + ": " + canon_err;
      return false;
    }
    outs.push_back(std::move(canonical));
  }
  // A depfile about some other target (stale, or written by another rule) says nothing about
  // this edge: rebuild to get a fresh one.
  Node* first_output = edge->outputs[0];
  if (outs[0] != first_output->path) {
    explanations_.Record(first_output, "expected depfile '{}' to mention '{}', got '{}'", path, first_output->path,
                         outs[0]);
    return false;
  }
  // Further targets must still be outputs of this edge.
  for (const std::string& out : outs) {
    bool declared = std::any_of(edge->outputs.begin(), edge->outputs.end(),
                                [&](const Node* o) { return o->path == out; });
    if (!declared) {
      *err = path + ": depfile mentions '" + out + "' as an output, but no such output was declared";
      return false;
    }
  }

  auto slot = PreallocateSpace(edge, static_cast<int>(parser.ins.size()));
  for (std::string_view in : parser.ins) {
    std::string canonical(in);
    std::string canon_err;
    if (!CanonicalizePath(&canonical, &canon_err)) {
      *err = path + ": " + canon_err;
      return false;
    }
    Node* node = state_->GetNode(canonical);
    *slot++ = node;
    node->out_edges.push_back(edge);
  }
  return true;
}

bool ImplicitDepLoader::LoadDepsFromLog(Edge* edge, std::string* err) {
  Node* output = edge->outputs[0];
  DepsLog::Deps* deps = deps_log_ ? deps_log_->GetDeps(output) : nullptr;
  if (!deps) {
    explanations_.Record(output, "deps for '{}' are missing", output->path);
    return false;
  }
  // The record describes the output as it was after the command ran; a newer output means the
  // record no longer describes it.
  if (output->mtime > deps->mtime) {
    explanations_.Record(output, "stored deps info out of date for '{}' ({} vs {})", output->path, deps->mtime,
                         output->mtime);
    if (!load_stale_deps_) return false;
    loaded_stale_ = true;
  }
  auto slot = PreallocateSpace(edge, static_cast<int>(deps->nodes.size()));
  for (Node* node : deps->nodes) {
    *slot++ = node;
    node->out_edges.push_back(edge);
  }
  // Spliced in, yet still no usable record: the edge stays dirty unless its contents vouch for it.
  return !loaded_stale_;
}

bool DyndepLoader::LoadDyndeps(Node* node, std::string* err) const {
  DyndepFile ddf;
  return LoadDyndeps(node, &ddf, err);
}

bool DyndepLoader::LoadDyndeps(Node* node, DyndepFile* ddf, std::string* err) const {
  node->dyndep_pending = false;
  explanations_.Record(node, "loading dyndep file '{}'", node->path);

  DyndepParser parser(state_, disk_, ddf);
  if (!parser.Load(node->path, err)) return false;

  for (Edge* edge : node->out_edges) {
    if (edge->dyndep != node) continue;
    auto it = ddf->find(edge);
    if (it == ddf->end()) {
      *err = "'" + edge->outputs[0]->path + "' not mentioned in its dyndep file '" + node->path + "'";
      return false;
    }
    it->second.used = true;
    if (!UpdateEdge(edge, it->second, err)) return false;
  }

  for (const auto& [edge, dyndeps] : *ddf) {
    if (!dyndeps.used) {
      *err = "dyndep file '" + node->path + "' mentions output '" + edge->outputs[0]->path +
             "' whose build statement does not have a dyndep binding for the file";
      return false;
    }
  }
  return true;
}

bool DyndepLoader::UpdateEdge(Edge* edge, const Dyndeps& dyndeps, std::string* err) const {
  // An edge naming a dyndep file always has its own scope (the `dyndep` binding), so this does
  // not leak into the file scope.
  if (dyndeps.restat) edge->env->AddBinding("restat", "1");

  edge->outputs.insert(edge->outputs.end(), dyndeps.implicit_outputs.begin(), dyndeps.implicit_outputs.end());
  edge->implicit_outs += static_cast<int>(dyndeps.implicit_outputs.size());
  for (Node* output : dyndeps.implicit_outputs) {
    if (output->in_edge) {
      *err = "multiple rules generate " + output->path;
      return false;
    }
    output->in_edge = edge;
  }

  edge->inputs.insert(edge->inputs.end() - edge->order_only_deps, dyndeps.implicit_inputs.begin(),
                      dyndeps.implicit_inputs.end());
  edge->implicit_deps += static_cast<int>(dyndeps.implicit_inputs.size());
  for (Node* input : dyndeps.implicit_inputs) input->out_edges.push_back(edge);
  return true;
}

}  // namespace headroom
