// `-t deps [targets]`: the dependencies .ninja_deps recorded for each output, and whether the
// record is still VALID (output not newer than when it was recorded) or STALE.
#include <cinttypes>
#include <cstdio>

#include "headroom/logs/deps_log.h"
#include "headroom/tools/tool_support.h"
#include "headroom/tools/tools.h"
#include "headroom/util/disk.h"
#include "headroom/util/messages.h"

namespace headroom {

namespace {

// Without targets: every logged output whose edge still records deps, in log order.
std::vector<Node*> LiveLoggedOutputs(const DepsLog& deps_log) {
  std::vector<Node*> outputs;
  for (Node* node : deps_log.nodes()) {
    if (DepsLog::IsDepsEntryLiveFor(node)) outputs.push_back(node);
  }
  return outputs;
}

void PrintDeps(const ToolContext& context, Node* node) {
  const DepsLog::Deps* deps = context.deps_log->GetDeps(node);
  if (!deps) {
    printf("%s: deps not found\n", node->path.c_str());
    return;
  }
  std::string err;
  TimeStamp mtime = context.disk->Stat(node->path, &err);
  if (mtime == -1) PrintError(err);  // reported; such an output still reads as VALID, as in ninja
  const bool stale = mtime == 0 || mtime > deps->mtime;
  printf("%s: #deps %d, deps mtime %" PRId64 " (%s)\n", node->path.c_str(), static_cast<int>(deps->nodes.size()),
         static_cast<int64_t>(deps->mtime), stale ? "STALE" : "VALID");
  for (const Node* dependency : deps->nodes) printf("    %s\n", dependency->path.c_str());
  printf("\n");
}

}  // namespace

int ToolDeps(const ToolContext& context, const ToolArgs& args) {
  const std::vector<std::string> names(args.begin() + 1, args.end());
  std::vector<Node*> nodes;
  if (names.empty()) {
    nodes = LiveLoggedOutputs(*context.deps_log);
  } else {
    std::string err;
    if (!CollectTargets(context, names, &nodes, &err)) {
      PrintError(err);
      return 1;
    }
  }
  for (Node* node : nodes) PrintDeps(context, node);
  return 0;
}

}  // namespace headroom
