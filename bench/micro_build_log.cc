// bench/micro_build_log.cc: Google Benchmark micro-benchmark of BuildLog::Load (include/headroom/logs/build_log.h)
// on a generated v7 .ninja_log with one line per output, in a temp file (page-cached after the first load).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "headroom/logs/build_log.h"

namespace {

std::string WriteLog(int entries) {
  char tmpl[] = "/tmp/headroom_bench_log_XXXXXX";
  int fd = mkstemp(tmpl);
  FILE* f = fdopen(fd, "w");
  fprintf(f, "# ninja log v7\n");
  for (int i = 0; i < entries; ++i) {
    // start end mtime output hash: the v7 line shape; the hash only has to be 16 hex digits.
    fprintf(f, "%d\t%d\t%lld\tobj/component%d/lib%d/f%d.o\t%016llx\n", i, i + 37,
            1700000000000000000LL + i, i % 13, i / 40, i % 40, 0x9e3779b97f4a7c15ULL * (i + 1));
  }
  fclose(f);
  return tmpl;
}

void BM_BuildLogLoad(benchmark::State& st) {
  const std::string path = WriteLog(static_cast<int>(st.range(0)));
  for (auto _ : st) {
    headroom::BuildLog log;
    std::string err;
    if (log.Load(path, &err) != headroom::LoadStatus::kSuccess) {
      st.SkipWithError(err.c_str());
      break;
    }
    benchmark::DoNotOptimize(log.ordered_entries().size());
  }
  st.SetItemsProcessed(st.iterations() * st.range(0));
  unlink(path.c_str());
}
BENCHMARK(BM_BuildLogLoad)->Arg(10000)->Arg(50000)->Arg(100000)->Arg(200000)->Unit(benchmark::kMillisecond);

}  // namespace
