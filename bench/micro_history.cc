// bench/micro_history.cc: Google Benchmark micro-benchmark of loading .headroom_history (HistoryStore in
// include/headroom/history/history_store.h) from a generated file in a temp dir (page-cached after the first load).
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>

#include <string>

#include <fmt/format.h>

#include "headroom/history/history_store.h"

namespace {

// `edges` outputs in 200 classes with `runs` records each, written through HistoryStore itself so the
// file is exactly what a build leaves behind. Records are interleaved run by run, like real builds.
std::string WriteHistory(int edges, int runs) {
  char dir_template[] = "/tmp/headroom_bench_history_XXXXXX";
  std::string path = std::string(mkdtemp(dir_template)) + "/" + headroom::HistoryStore::kFileName;
  headroom::HistoryStore store;
  store.Open(path);
  std::string error;
  for (int run = 0; run < runs; ++run) {
    for (int i = 0; i < edges; ++i) {
      headroom::HistoryRecord record;
      record.peak_bytes = (300ull << 20) + static_cast<uint64_t>(i) * 4096 + run;
      record.duration_ms = 1200 + i % 700;
      record.method = headroom::PeakMethod::kCgroup;
      std::string cls = fmt::format("CXX_COMPILER__target{} /usr/bin/c++ -DFOO -O2 -g -std=c++20 -c .cc", i % 200);
      std::string output = fmt::format("obj/module{}/target{}/file{}.cc.o", i % 37, i % 200, i);
      store.Record(output, 0x9e3779b97f4a7c15ull * (i + 1), cls, record, &error);
    }
  }
  return path;
}

// Loads `path` once per iteration; false (the benchmark marked as skipped) when the file gave a warning.
bool LoadEachIteration(benchmark::State& st, const std::string& path, size_t* edges) {
  for (auto _ : st) {
    headroom::HistoryStore store;
    std::string warning = store.LoadForReading(path);
    if (!warning.empty()) {
      st.SkipWithError(warning.c_str());
      return false;
    }
    *edges = store.edge_count();
    benchmark::DoNotOptimize(*edges);
  }
  return true;
}

void BM_HistoryLoad(benchmark::State& st) {
  const std::string path = WriteHistory(static_cast<int>(st.range(0)), static_cast<int>(st.range(1)));
  size_t edges = 0;
  LoadEachIteration(st, path, &edges);
  st.SetItemsProcessed(st.iterations() * st.range(0) * st.range(1));
  unlink(path.c_str());
  rmdir(path.substr(0, path.rfind('/')).c_str());
}
// {edges, records per edge}: one run of a 20k- and a 50k-edge build, and a 50k-edge history with 4 runs each.
BENCHMARK(BM_HistoryLoad)->Args({20000, 1})->Args({50000, 1})->Args({50000, 4})->Unit(benchmark::kMillisecond);

// Loads the file named by $HEADROOM_BENCH_HISTORY (bench/history_load.py sets it, next to a .ninja_log of the
// same outputs that ninja loads in the same run); skipped when unset.
void BM_HistoryLoadFile(benchmark::State& st) {
  const char* path = std::getenv("HEADROOM_BENCH_HISTORY");
  if (!path) {
    st.SkipWithError("HEADROOM_BENCH_HISTORY is not set");
    return;
  }
  size_t edges = 0;
  if (!LoadEachIteration(st, path, &edges)) return;
  st.counters["edges"] = static_cast<double>(edges);
}
BENCHMARK(BM_HistoryLoadFile)->Unit(benchmark::kMillisecond);

}  // namespace
