// `-t rules [-d]`: the top-level file's rules (phony included), sorted by name; `-d` adds each
// rule's description as written in the manifest (variables unexpanded).
#include <cstdio>

#include "headroom/tools/tool_support.h"
#include "headroom/tools/tools.h"

namespace headroom {

namespace {

void PrintRulesUsage() {
  printf(
      "usage: ninja -t rules [options]\n"
      "\n"
      "options:\n"
      "  -d     also print the description of the rule\n"
      "  -h     print this message\n");
}

}  // namespace

int ToolRules(const ToolContext& context, const ToolArgs& args) {
  bool print_description = false;
  ToolOptionParser parser(args, "hd");
  for (int option; (option = parser.Next()) != -1;) {
    if (option != 'd') {
      PrintRulesUsage();
      return 1;
    }
    print_description = true;
  }
  // Subninja scopes have their own rules; ninja lists only the top-level ones.
  for (const auto& [name, rule] : context.state->bindings.rules()) {
    printf("%s", name.c_str());
    if (print_description) {
      const EvalString* description = rule->GetBinding("description");
      if (description) printf(": %s", description->Unparse().c_str());
    }
    printf("\n");
  }
  return 0;
}

}  // namespace headroom
