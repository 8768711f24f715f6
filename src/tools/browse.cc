// `-t browse`: ninja serves an interactive graph through a Python web server; headroom does not
// ship one and says so instead of failing obscurely.
#include "headroom/tools/tools.h"
#include "headroom/util/messages.h"

namespace headroom {

int ToolBrowse(const ToolContext&, const ToolArgs&) {
  PrintError(
      "the browse tool is not supported in headroom; use 'ninja -t graph | dot -Tsvg -o graph.svg' "
      "or 'ninja -t query TARGET' instead");
  return 1;
}

}  // namespace headroom
