// ToolContext services that need more than one module: loading every dyndep file up front.
#include "headroom/scan/scan.h"
#include "headroom/tools/tool.h"

namespace headroom {

bool ToolContext::LoadAllDyndeps(std::string* err) const {
  DyndepLoader loader(state, disk, nullptr);
  bool all_loaded = true;
  // Index loop: loading never adds edges, but keep clear of iterator invalidation anyway.
  for (size_t i = 0; i < state->edges.size(); ++i) {
    Node* dyndep = state->edges[i]->dyndep;
    if (!dyndep || !dyndep->dyndep_pending) continue;
    std::string load_err;
    if (loader.LoadDyndeps(dyndep, &load_err)) continue;
    // Keep going: callers (clean, cleandead) want as much of the graph as can be known.
    if (all_loaded) *err = load_err;
    all_loaded = false;
  }
  return all_loaded;
}

}  // namespace headroom
