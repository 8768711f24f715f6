// Placeholders for tools not written yet: each says so plainly instead of pretending to work.
#include "headroom/tools/tools.h"
#include "headroom/util/messages.h"

namespace headroom {

namespace {
int NotYet(const ToolArgs& args) {
  Error("tool '{}' is not implemented in headroom yet", args.empty() ? "?" : args[0]);
  return 1;
}
}  // namespace

int ToolBrowse(const ToolContext&, const ToolArgs& args) { return NotYet(args); }
int ToolClean(const ToolContext&, const ToolArgs& args) { return NotYet(args); }
int ToolCleanDead(const ToolContext&, const ToolArgs& args) { return NotYet(args); }
int ToolCommands(const ToolContext&, const ToolArgs& args) { return NotYet(args); }
int ToolCompilationDatabase(const ToolContext&, const ToolArgs& args) { return NotYet(args); }
int ToolCompilationDatabaseForTargets(const ToolContext&, const ToolArgs& args) { return NotYet(args); }
int ToolDeps(const ToolContext&, const ToolArgs& args) { return NotYet(args); }
int ToolGraph(const ToolContext&, const ToolArgs& args) { return NotYet(args); }
int ToolInputs(const ToolContext&, const ToolArgs& args) { return NotYet(args); }
int ToolMemStats(const ToolContext&, const ToolArgs& args) { return NotYet(args); }
int ToolMissingDeps(const ToolContext&, const ToolArgs& args) { return NotYet(args); }
int ToolMultiInputs(const ToolContext&, const ToolArgs& args) { return NotYet(args); }
int ToolQuery(const ToolContext&, const ToolArgs& args) { return NotYet(args); }
int ToolRecompact(const ToolContext&, const ToolArgs& args) { return NotYet(args); }
int ToolRestat(const ToolContext&, const ToolArgs& args) { return NotYet(args); }
int ToolRules(const ToolContext&, const ToolArgs& args) { return NotYet(args); }
int ToolTargets(const ToolContext&, const ToolArgs& args) { return NotYet(args); }
int ToolUrtle(const ToolContext&, const ToolArgs& args) { return NotYet(args); }

bool ToolContext::LoadAllDyndeps(std::string* err) const { return true; }

}  // namespace headroom
