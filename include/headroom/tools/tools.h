// Entry points of the individual `-t` tools (one file each under src/tools/).
#pragma once

#include <string>
#include <vector>

#include "headroom/tools/tool.h"

namespace headroom {

using ToolArgs = std::vector<std::string>;

int ToolBrowse(const ToolContext& context, const ToolArgs& args);
int ToolClean(const ToolContext& context, const ToolArgs& args);
int ToolCleanDead(const ToolContext& context, const ToolArgs& args);
int ToolCommands(const ToolContext& context, const ToolArgs& args);
int ToolCompilationDatabase(const ToolContext& context, const ToolArgs& args);
int ToolCompilationDatabaseForTargets(const ToolContext& context, const ToolArgs& args);
int ToolDeps(const ToolContext& context, const ToolArgs& args);
int ToolGraph(const ToolContext& context, const ToolArgs& args);
int ToolHistory(const ToolContext& context, const ToolArgs& args);
int ToolInputs(const ToolContext& context, const ToolArgs& args);
int ToolMemStats(const ToolContext& context, const ToolArgs& args);
int ToolMissingDeps(const ToolContext& context, const ToolArgs& args);
int ToolMultiInputs(const ToolContext& context, const ToolArgs& args);
int ToolPlan(const ToolContext& context, const ToolArgs& args);
int ToolQuery(const ToolContext& context, const ToolArgs& args);
int ToolRecompact(const ToolContext& context, const ToolArgs& args);
int ToolRestat(const ToolContext& context, const ToolArgs& args);
int ToolRules(const ToolContext& context, const ToolArgs& args);
int ToolTargets(const ToolContext& context, const ToolArgs& args);
int ToolUrtle(const ToolContext& context, const ToolArgs& args);

}  // namespace headroom
