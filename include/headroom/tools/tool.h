// The `-t` tool registry: each tool runs after flags, after the manifest loads, or after the logs open.
#pragma once

#include <string>
#include <vector>

#include "headroom/build/build_config.h"
#include "headroom/cli/options.h"
#include "headroom/graph/graph.h"

namespace headroom {

class BuildLog;
class DepsLog;
class DiskInterface;

// What a tool may use. Fields a phase has not reached yet are empty (e.g. no manifest after flags).
struct ToolContext {
  const Options* options = nullptr;
  const BuildConfig* config = nullptr;
  State* state = nullptr;
  BuildLog* build_log = nullptr;
  DepsLog* deps_log = nullptr;
  DiskInterface* disk = nullptr;
  std::string build_dir;  // the manifest's `builddir`, "" for the current directory
  // Opens .ninja_log/.ninja_deps the way a build does; `recompact_only` recompacts and stops.
  bool (*open_logs)(void* owner, bool recompact_only) = nullptr;
  void* owner = nullptr;
  // Loads the dyndep files of every edge that has one (clean and cleandead need them).
  bool LoadAllDyndeps(std::string* err) const;
};

struct Tool {
  enum class Phase { kAfterFlags, kAfterLoad, kAfterLogs };
  const char* name;
  const char* description;  // null: hidden from `-t list`
  Phase phase;
  // argv-style: args[0] is the tool name, then the tool's own arguments.
  int (*run)(const ToolContext& context, const std::vector<std::string>& args);
};

const std::vector<Tool>& AllTools();
// Finds a tool; "list" prints the list and returns null with *exit_code 0; an unknown name is fatal
// with ninja's spelling hint.
const Tool* ChooseTool(const std::string& name, int* exit_code);

}  // namespace headroom
