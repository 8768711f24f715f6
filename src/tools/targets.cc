// `-t targets [depth N | rule [R] | all]`: the targets as a tree from the roots (default depth 1),
// the outputs of one rule, the source files, or every output with its rule.
#include <cstdio>
#include <cstdlib>
#include <set>

#include "headroom/tools/tool_support.h"
#include "headroom/tools/tools.h"
#include "headroom/util/messages.h"

namespace headroom {

namespace {

// depth <= 0 means unlimited; each level is indented by two more spaces.
void PrintTargetTree(const std::vector<Node*>& nodes, int depth, int indent) {
  for (const Node* node : nodes) {
    printf("%*s", indent * 2, "");
    if (!node->in_edge) {
      printf("%s\n", node->path.c_str());
      continue;
    }
    printf("%s: %s\n", node->path.c_str(), node->in_edge->rule->name().c_str());
    if (depth > 1 || depth <= 0) PrintTargetTree(node->in_edge->inputs, depth - 1, indent + 1);
  }
}

int PrintTreeFromRoots(const ToolContext& context, int depth) {
  std::string err;
  std::vector<Node*> roots = context.state->RootNodes(&err);
  if (!err.empty()) {
    PrintError(err);
    return 1;
  }
  PrintTargetTree(roots, depth, 0);
  return 0;
}

// Inputs nothing builds, once per use (ninja does not de-duplicate them).
void PrintSourceFiles(const State& state) {
  for (const auto& edge : state.edges) {
    for (const Node* input : edge->inputs) {
      if (!input->in_edge) printf("%s\n", input->path.c_str());
    }
  }
}

void PrintOutputsOfRule(const State& state, const std::string& rule_name) {
  std::set<std::string> outputs;
  for (const auto& edge : state.edges) {
    if (edge->rule->name() != rule_name) continue;
    for (const Node* output : edge->outputs) outputs.insert(output->path);
  }
  for (const std::string& output : outputs) printf("%s\n", output.c_str());
}

void PrintAllOutputs(const State& state) {
  for (const auto& edge : state.edges) {
    for (const Node* output : edge->outputs) printf("%s: %s\n", output->path.c_str(), edge->rule->name().c_str());
  }
}

}  // namespace

int ToolTargets(const ToolContext& context, const ToolArgs& args) {
  if (args.size() < 2) return PrintTreeFromRoots(context, 1);
  const std::string& mode = args[1];
  if (mode == "depth") return PrintTreeFromRoots(context, args.size() > 2 ? atoi(args[2].c_str()) : 1);
  if (mode == "rule") {
    if (args.size() > 2)
      PrintOutputsOfRule(*context.state, args[2]);
    else
      PrintSourceFiles(*context.state);
    return 0;
  }
  if (mode == "all") {
    PrintAllOutputs(*context.state);
    return 0;
  }
  std::string message = "unknown target tool mode '" + mode + "'";
  if (const char* hint = SpellcheckWord(mode, {"rule", "depth", "all"}))
    message += std::string(", did you mean '") + hint + "'?";
  PrintError(message);
  return 1;
}

}  // namespace headroom
