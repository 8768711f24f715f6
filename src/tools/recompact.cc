// `-t recompact`: loads both logs and rewrites them without dead or superseded entries (CMake
// runs it after every generate). Missing logs are fine.
#include <errno.h>
#include <string.h>

#include "headroom/tools/tools.h"
#include "headroom/util/disk.h"
#include "headroom/util/messages.h"

namespace headroom {

namespace {

// The logs live in `builddir`; create it as a build would (not in a dry run).
bool EnsureBuildDirExists(const ToolContext& context) {
  if (context.build_dir.empty() || context.config->dry_run) return true;
  if (!context.disk->MakeDirs(context.build_dir + "/.") && errno != EEXIST) {
    Error("creating build directory {}: {}", context.build_dir, strerror(errno));
    return false;
  }
  return true;
}

}  // namespace

int ToolRecompact(const ToolContext& context, const ToolArgs&) {
  if (!EnsureBuildDirExists(context)) return 1;
  return context.open_logs(context.owner, /*recompact_only=*/true) ? 0 : 1;
}

}  // namespace headroom
