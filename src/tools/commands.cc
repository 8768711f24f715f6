// `-t commands [-s] [targets]`: the commands that build the targets, inputs' commands first,
// each edge once, phony edges skipped; `-s` prints only each target's own command.
#include <cstdio>
#include <set>

#include "headroom/tools/tool_support.h"
#include "headroom/tools/tools.h"
#include "headroom/util/messages.h"

namespace headroom {

namespace {

void PrintCommandsUsage() {
  printf(
      "usage: ninja -t commands [options] [targets]\n"
      "\n"
      "options:\n"
      "  -s     only print the final command to build [target], not the whole chain\n");
}

void PrintCommands(const Edge* edge, bool whole_chain, std::set<const Edge*>* printed) {
  if (!edge || !printed->insert(edge).second) return;
  if (whole_chain) {
    for (const Node* input : edge->inputs) PrintCommands(input->in_edge, whole_chain, printed);
  }
  if (!edge->is_phony()) puts(edge->EvaluateCommand().c_str());
}

}  // namespace

int ToolCommands(const ToolContext& context, const ToolArgs& args) {
  bool whole_chain = true;
  ToolOptionParser parser(args, "hs");
  for (int option; (option = parser.Next()) != -1;) {
    if (option != 's') {
      PrintCommandsUsage();
      return 1;
    }
    whole_chain = false;
  }
  std::vector<Node*> targets;
  std::string err;
  if (!CollectTargets(context, parser.Operands(), &targets, &err)) {
    PrintError(err);
    return 1;
  }
  std::set<const Edge*> printed;
  for (const Node* target : targets) PrintCommands(target->in_edge, whole_chain, &printed);
  return 0;
}

}  // namespace headroom
