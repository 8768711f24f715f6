// `-t query targets`: each path's producing edge (rule, inputs marked | implicit and || order-only,
// validations) and the outputs of the edges that use it. Loads the edge's dyndep file first.
#include <cstdio>

#include "headroom/scan/scan.h"
#include "headroom/tools/tool_support.h"
#include "headroom/tools/tools.h"
#include "headroom/util/messages.h"

namespace headroom {

namespace {

void PrintProducingEdge(const Edge& edge) {
  printf("  input: %s\n", edge.rule->name().c_str());
  for (size_t i = 0; i < edge.inputs.size(); ++i) {
    const char* marker = edge.is_order_only(i) ? "|| " : edge.is_implicit(i) ? "| " : "";
    printf("    %s%s\n", marker, edge.inputs[i]->path.c_str());
  }
  if (edge.validations.empty()) return;
  printf("  validations:\n");
  for (const Node* validation : edge.validations) printf("    %s\n", validation->path.c_str());
}

void PrintOutputsOf(const std::vector<Edge*>& edges) {
  for (const Edge* edge : edges) {
    for (const Node* output : edge->outputs) printf("    %s\n", output->path.c_str());
  }
}

}  // namespace

int ToolQuery(const ToolContext& context, const ToolArgs& args) {
  if (args.size() < 2) {
    PrintError("expected a target to query");
    return 1;
  }
  DyndepLoader dyndep_loader(context.state, context.disk, nullptr);
  for (size_t i = 1; i < args.size(); ++i) {
    std::string err;
    Node* node = CollectTarget(context, args[i], &err);
    if (!node) {
      PrintError(err);
      return 1;
    }
    printf("%s:\n", node->path.c_str());
    if (Edge* edge = node->in_edge) {
      if (edge->dyndep && edge->dyndep->dyndep_pending && !dyndep_loader.LoadDyndeps(edge->dyndep, &err))
        PrintWarning(err + "\n");  // the extra newline matches ninja's blank line
      PrintProducingEdge(*edge);
    }
    printf("  outputs:\n");
    PrintOutputsOf(node->out_edges);
    if (!node->validation_out_edges.empty()) {
      printf("  validation for:\n");
      PrintOutputsOf(node->validation_out_edges);
    }
  }
  return 0;
}

}  // namespace headroom
