// `-t cleandead`: removes files the build log remembers but the manifest no longer mentions
// (after loading dyndep files, so outputs they declare are not mistaken for dead ones).
#include "headroom/tools/cleaner.h"
#include "headroom/tools/tools.h"

namespace headroom {

int ToolCleanDead(const ToolContext& context, const ToolArgs&) {
  Cleaner cleaner(context);
  return cleaner.CleanDead(*context.build_log);
}

}  // namespace headroom
