// `-t clean [-g] [-r rules | targets]`: removes built files, depfiles and rspfiles.
#include <cstdio>

#include "headroom/tools/cleaner.h"
#include "headroom/tools/tool_support.h"
#include "headroom/tools/tools.h"
#include "headroom/util/messages.h"

namespace headroom {

namespace {

void PrintCleanUsage() {
  printf(
      "usage: ninja -t clean [options] [targets]\n"
      "\n"
      "options:\n"
      "  -g     also clean files marked as ninja generator output\n"
      "  -r     interpret targets as a list of rules to clean instead\n");
}

}  // namespace

int ToolClean(const ToolContext& context, const ToolArgs& args) {
  bool include_generator_outputs = false;
  bool operands_are_rules = false;
  ToolOptionParser parser(args, "hgr");
  for (int option; (option = parser.Next()) != -1;) {
    switch (option) {
      case 'g': include_generator_outputs = true; break;
      case 'r': operands_are_rules = true; break;
      default: PrintCleanUsage(); return 1;
    }
  }
  const std::vector<std::string> operands = parser.Operands();
  if (operands_are_rules && operands.empty()) {
    PrintError("expected a rule to clean");
    return 1;
  }

  Cleaner cleaner(context);
  if (operands.empty()) return cleaner.CleanAll(include_generator_outputs);
  // Named targets and rules are cleaned whatever their generator flag: the user asked for them.
  return operands_are_rules ? cleaner.CleanRules(operands) : cleaner.CleanTargets(operands);
}

}  // namespace headroom
