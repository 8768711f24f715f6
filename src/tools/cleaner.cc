// The shared engine of `-t clean` and `-t cleandead`: walks the graph or the build log and
// removes files once each, reporting as ninja does.
#include "headroom/tools/cleaner.h"

#include <cstdio>

#include "headroom/logs/build_log.h"
#include "headroom/util/disk.h"
#include "headroom/util/messages.h"
#include "headroom/util/path.h"

namespace headroom {

Cleaner::Cleaner(const ToolContext& context) : context_(context) {}

bool Cleaner::IsVerbose() const {
  // A dry run lists what it would remove: that list is its whole point.
  const BuildConfig& config = *context_.config;
  if (config.verbosity == BuildConfig::Verbosity::kQuiet) return false;
  return config.verbosity == BuildConfig::Verbosity::kVerbose || config.dry_run;
}

void Cleaner::PrintHeader() {
  if (context_.config->verbosity == BuildConfig::Verbosity::kQuiet) return;
  printf("Cleaning...");
  printf(IsVerbose() ? "\n" : " ");
  fflush(stdout);
}

void Cleaner::PrintFooter() {
  if (context_.config->verbosity == BuildConfig::Verbosity::kQuiet) return;
  printf("%d files.\n", cleaned_files_count_);
}

void Cleaner::LoadDyndeps() {
  std::string ignored;  // a missing or broken dyndep file just means less to clean
  context_.LoadAllDyndeps(&ignored);
}

bool Cleaner::FileExists(const std::string& path) const {
  std::string err;
  TimeStamp mtime = context_.disk->Stat(path, &err);
  if (mtime == -1) PrintError(err);
  return mtime > 0;
}

void Cleaner::Report(const std::string& path) {
  ++cleaned_files_count_;
  if (IsVerbose()) printf("Remove %s\n", path.c_str());
}

void Cleaner::Remove(const std::string& path) {
  if (!removed_.insert(path).second) return;
  if (context_.config->dry_run) {
    if (FileExists(path)) Report(path);
    return;
  }
  int result = context_.disk->RemoveFile(path);
  if (result == 0) Report(path);
  if (result < 0) status_ = 1;
}

void Cleaner::RemoveEdgeFiles(const Edge& edge) {
  std::string depfile = edge.GetUnescapedDepfile();
  if (!depfile.empty()) Remove(depfile);
  std::string rspfile = edge.GetUnescapedRspfile();
  if (!rspfile.empty()) Remove(rspfile);
}

int Cleaner::CleanAll(bool include_generator_outputs) {
  PrintHeader();
  LoadDyndeps();
  for (const auto& edge : context_.state->edges) {
    if (edge->is_phony()) continue;  // phony outputs are names, not files
    if (!include_generator_outputs && edge->GetBindingBool("generator")) continue;
    for (const Node* output : edge->outputs) Remove(output->path);
    RemoveEdgeFiles(*edge);
  }
  PrintFooter();
  return status_;
}

void Cleaner::CleanTarget(Node* target) {
  if (!visited_targets_.insert(target).second) return;
  Edge* edge = target->in_edge;
  if (!edge) return;
  if (!edge->is_phony()) {
    Remove(target->path);
    RemoveEdgeFiles(*edge);
  }
  for (Node* input : edge->inputs) CleanTarget(input);
}

int Cleaner::CleanTargets(const std::vector<std::string>& targets) {
  PrintHeader();
  LoadDyndeps();
  for (const std::string& name : targets) {
    if (name.empty()) {
      PrintError("failed to canonicalize '': empty path");
      status_ = 1;
      continue;
    }
    std::string path = name;
    std::string err;
    CanonicalizePath(&path, &err);
    Node* target = context_.state->LookupNode(path);
    if (!target) {
      Error("unknown target '{}'", path);
      status_ = 1;
      continue;
    }
    if (IsVerbose()) printf("Target %s\n", path.c_str());
    CleanTarget(target);
  }
  PrintFooter();
  return status_;
}

void Cleaner::CleanRule(const std::string& rule_name) {
  // Rules are matched by name, so a subninja's rule of the same name is cleaned too.
  for (const auto& edge : context_.state->edges) {
    if (edge->rule->name() != rule_name) continue;
    for (const Node* output : edge->outputs) {
      Remove(output->path);
      RemoveEdgeFiles(*edge);
    }
  }
}

int Cleaner::CleanRules(const std::vector<std::string>& rules) {
  PrintHeader();
  LoadDyndeps();
  for (const std::string& name : rules) {
    const Rule* rule = context_.state->bindings.LookupRule(name);
    if (!rule) {
      Error("unknown rule '{}'", name);
      status_ = 1;
      continue;
    }
    if (IsVerbose()) printf("Rule %s\n", name.c_str());
    CleanRule(rule->name());
  }
  PrintFooter();
  return status_;
}

int Cleaner::CleanDead(const BuildLog& build_log) {
  PrintHeader();
  LoadDyndeps();
  for (const BuildLogEntry* entry : build_log.ordered_entries()) {
    // Still an output or an input of some edge (dyndep-added ones included): not dead.
    const Node* node = context_.state->LookupNode(entry->output);
    if (node && (node->in_edge || !node->out_edges.empty())) continue;
    Remove(entry->output);
  }
  PrintFooter();
  return status_;
}

}  // namespace headroom
