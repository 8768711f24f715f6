// Placeholder for `-t memstats`, which the memory team owns: says so plainly instead of pretending.
#include "headroom/tools/tools.h"
#include "headroom/util/messages.h"

namespace headroom {

int ToolMemStats(const ToolContext&, const ToolArgs& args) {
  Error("tool '{}' is not implemented in headroom yet", args.empty() ? "?" : args[0]);
  return 1;
}

}  // namespace headroom
