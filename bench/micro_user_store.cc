// bench/micro_user_store.cc: Google Benchmark micro-benchmark of the per-user history store (UserStore in
// include/headroom/history/user_store.h): its load at the start of a build and its merge-and-replace at the end.
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "headroom/history/user_store.h"

namespace {

headroom::HistoryRecord Record(int i) {
  headroom::HistoryRecord record;
  record.peak_bytes = (300ull << 20) + static_cast<uint64_t>(i) * 4096;
  record.duration_ms = 1200 + i % 700;
  record.method = headroom::PeakMethod::kCgroup;
  return record;
}

std::string ClassOf(int i) {
  return fmt::format("CXX_COMPILER__target{} /usr/bin/c++ -DFOO -O2 -g -std=c++20 -c .cc", i % 200);
}

// A store holding `edges` edges of one run each in 200 classes, written through UserStore itself.
std::string WriteStore(int edges) {
  char dir_template[] = "/tmp/headroom_bench_store_XXXXXX";
  std::string dir = mkdtemp(dir_template);
  headroom::UserStore store(dir, headroom::PathNormaliser::ForBuild("/b"));
  store.Load();
  for (int i = 0; i < edges; ++i) {
    store.Record(fmt::format("obj/module{}/target{}/file{}.cc.o", i % 37, i % 200, i), ClassOf(i), Record(i),
                 1'800'000'000 + i);
  }
  store.Flush(1'800'000'000 + edges);
  return dir;
}

void BM_UserStoreLoad(benchmark::State& st) {
  const std::string dir = WriteStore(static_cast<int>(st.range(0)));
  for (auto _ : st) {
    headroom::UserStore store(dir, headroom::PathNormaliser::ForBuild("/b"));
    std::string warning = store.Load();
    if (!warning.empty()) {
      st.SkipWithError(warning.c_str());
      break;
    }
    benchmark::DoNotOptimize(store.edge_count());
  }
  st.counters["file_bytes"] = static_cast<double>(std::filesystem::file_size(dir + "/history"));
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_UserStoreLoad)->Arg(20000)->Arg(50000)->Unit(benchmark::kMillisecond);

// The end of a build that ran `range(1)` jobs into a store of `range(0)` edges: lock, re-read, merge, write.
void BM_UserStoreFlush(benchmark::State& st) {
  const std::string dir = WriteStore(static_cast<int>(st.range(0)));
  headroom::UserStore store(dir, headroom::PathNormaliser::ForBuild("/b"));
  store.Load();
  for (auto _ : st) {
    for (int i = 0; i < st.range(1); ++i) store.Record(fmt::format("new{}.o", i), ClassOf(i), Record(i), 1'800'100'000);
    std::string warning = store.Flush(1'800'100'000);
    if (!warning.empty()) {
      st.SkipWithError(warning.c_str());
      break;
    }
  }
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_UserStoreFlush)->Args({50000, 100})->Unit(benchmark::kMillisecond);

}  // namespace
