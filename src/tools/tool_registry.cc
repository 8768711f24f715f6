// The table of `-t` tools and the lookup with ninja's `-t list` output and spelling hint.
#include <cstdio>

#include "headroom/tools/tool.h"
#include "headroom/tools/tools.h"
#include "headroom/util/messages.h"

namespace headroom {

const std::vector<Tool>& AllTools() {
  using Phase = Tool::Phase;
  static const std::vector<Tool> kTools = {
      {"browse", "browse dependency graph in a web browser", Phase::kAfterLoad, ToolBrowse},
      {"clean", "clean built files", Phase::kAfterLoad, ToolClean},
      {"commands", "list all commands required to rebuild given targets", Phase::kAfterLoad, ToolCommands},
      {"inputs", "list all inputs required to rebuild given targets", Phase::kAfterLoad, ToolInputs},
      {"multi-inputs", "print one or more sets of inputs required to build targets", Phase::kAfterLoad,
       ToolMultiInputs},
      {"deps", "show dependencies stored in the deps log", Phase::kAfterLogs, ToolDeps},
      {"missingdeps", "check deps log dependencies on generated files", Phase::kAfterLogs, ToolMissingDeps},
      {"graph", "output graphviz dot file for targets", Phase::kAfterLoad, ToolGraph},
      {"query", "show inputs/outputs for a path", Phase::kAfterLogs, ToolQuery},
      {"targets", "list targets by their rule or depth in the DAG", Phase::kAfterLoad, ToolTargets},
      {"compdb", "dump JSON compilation database to stdout", Phase::kAfterLoad, ToolCompilationDatabase},
      {"compdb-targets", "dump JSON compilation database for a given list of targets to stdout",
       Phase::kAfterLoad, ToolCompilationDatabaseForTargets},
      {"recompact", "recompacts ninja-internal data structures", Phase::kAfterLoad, ToolRecompact},
      {"restat", "restats all outputs in the build log", Phase::kAfterFlags, ToolRestat},
      {"rules", "list all rules", Phase::kAfterLoad, ToolRules},
      {"cleandead", "clean built files that are no longer produced by the manifest", Phase::kAfterLogs,
       ToolCleanDead},
      {"urtle", nullptr, Phase::kAfterFlags, ToolUrtle},
      // headroom's own tool stays out of `-t list`, whose output must match ninja's byte for byte.
      {"memstats", nullptr, Phase::kAfterLoad, ToolMemStats},
      {"history", nullptr, Phase::kAfterFlags, ToolHistory},
      {"plan", nullptr, Phase::kAfterLogs, ToolPlan},
  };
  return kTools;
}

namespace {

bool IsHeadroomOnly(const Tool& tool) {
  return tool.run == ToolMemStats || tool.run == ToolHistory || tool.run == ToolPlan;
}

}  // namespace

const Tool* ChooseTool(const std::string& name, int* exit_code) {
  const auto& tools = AllTools();
  if (name == "list") {
    printf("ninja subtools:\n");
    for (const Tool& tool : tools) {
      if (tool.description) printf("%11s  %s\n", tool.name, tool.description);
    }
    *exit_code = 0;
    return nullptr;
  }
  for (const Tool& tool : tools) {
    if (name == tool.name) return &tool;
  }
  const char* suggestion = nullptr;
  int best = 4;
  for (const Tool& tool : tools) {
    int distance = EditDistance(name, tool.name, true, 3);
    // headroom's own tools are offered only for a one-letter slip, so ninja's hints stay ninja's ("lst" must not
    // get "plan") while "memstat" still gets "memstats".
    if (IsHeadroomOnly(tool) && distance > 1) continue;
    if (distance < best) {
      best = distance;
      suggestion = tool.name;
    }
  }
  if (suggestion) Fatal(fmt::format("unknown tool '{}', did you mean '{}'?", name, suggestion));
  Fatal(fmt::format("unknown tool '{}'", name));
}

}  // namespace headroom
