// libFuzzer target: HistoryStore::LoadForReading of an arbitrary .headroom_history, then queries on it.
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "headroom/history/history_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static headroom_fuzz::ScratchFile scratch("history");
  const std::string& path = scratch.Write(data, size);
  headroom::HistoryStore store;
  store.LoadForReading(path);
  // Touch what was loaded, as -t memstats and the estimator would.
  for (const auto& [output, edge] : store.edges()) {
    store.FindEdge(output, edge.command_hash);
    if (edge.class_id < store.class_count()) store.ClassById(edge.class_id).PeakQuantile(0.9);
  }
  for (const auto& stats : store.classes()) {
    stats.PeakQuantile(0.5);
    stats.MeanDurationMs();
  }
  store.LiveRecordCount();
  return 0;
}
