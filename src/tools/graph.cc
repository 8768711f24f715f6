// `-t graph [targets]`: the build graph as a graphviz dot file. Nodes and edges are identified
// by their addresses (like ninja), so only the shape of the output is reproducible.
#include <algorithm>
#include <cstdio>
#include <set>

#include "headroom/scan/scan.h"
#include "headroom/tools/tool_support.h"
#include "headroom/tools/tools.h"
#include "headroom/util/messages.h"

namespace headroom {

namespace {

class GraphvizWriter {
 public:
  explicit GraphvizWriter(const ToolContext& context) : dyndep_loader_(context.state, context.disk, nullptr) {}

  void Start() {
    printf("digraph ninja {\n");
    printf("rankdir=\"LR\"\n");
    printf("node [fontsize=10, shape=box, height=0.25]\n");
    printf("edge [fontsize=10]\n");
  }
  void Finish() { printf("}\n"); }

  void AddTarget(Node* node) {
    if (!visited_nodes_.insert(node).second) return;
    std::string label = node->path;
    std::replace(label.begin(), label.end(), '\\', '/');
    printf("\"%p\" [label=\"%s\"]\n", static_cast<void*>(node), label.c_str());
    Edge* edge = node->in_edge;
    if (!edge || !visited_edges_.insert(edge).second) return;
    LoadPendingDyndep(edge);
    if (edge->inputs.size() == 1 && edge->outputs.size() == 1)
      PrintSimpleEdge(*edge);
    else
      PrintEdgeNode(*edge);
    for (Node* input : edge->inputs) AddTarget(input);
  }

 private:
  void LoadPendingDyndep(Edge* edge) {
    if (!edge->dyndep || !edge->dyndep->dyndep_pending) return;
    std::string err;
    // The trailing newline leaves a blank line after the warning, as ninja's does.
    if (!dyndep_loader_.LoadDyndeps(edge->dyndep, &err)) PrintWarning(err + "\n");
  }

  // One input, one output: a single labelled arrow. The space before the rule name is ninja's.
  static void PrintSimpleEdge(const Edge& edge) {
    printf("\"%p\" -> \"%p\" [label=\" %s\"]\n", static_cast<void*>(edge.inputs[0]),
           static_cast<void*>(edge.outputs[0]), edge.rule->name().c_str());
  }

  static void PrintEdgeNode(const Edge& edge) {
    const void* id = &edge;
    printf("\"%p\" [label=\"%s\", shape=ellipse]\n", id, edge.rule->name().c_str());
    for (const Node* output : edge.outputs) printf("\"%p\" -> \"%p\"\n", id, static_cast<const void*>(output));
    for (size_t i = 0; i < edge.inputs.size(); ++i) {
      const char* style = edge.is_order_only(i) ? " style=dotted" : "";
      printf("\"%p\" -> \"%p\" [arrowhead=none%s]\n", static_cast<const void*>(edge.inputs[i]), id, style);
    }
  }

  DyndepLoader dyndep_loader_;
  std::set<const Node*> visited_nodes_;
  std::set<const Edge*> visited_edges_;
};

}  // namespace

int ToolGraph(const ToolContext& context, const ToolArgs& args) {
  std::vector<Node*> targets;
  std::string err;
  if (!CollectTargets(context, std::vector<std::string>(args.begin() + 1, args.end()), &targets, &err)) {
    PrintError(err);
    return 1;
  }
  GraphvizWriter writer(context);
  writer.Start();
  for (Node* target : targets) writer.AddTarget(target);
  writer.Finish();
  return 0;
}

}  // namespace headroom
