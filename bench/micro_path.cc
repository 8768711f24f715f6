// bench/micro_path.cc: Google Benchmark micro-benchmarks of CanonicalizePath (include/headroom/util/path.h)
// on the path shapes a Chromium build feeds it (already clean, ./ and .. folding, ../../ prefixes).
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "headroom/util/path.h"

namespace {

void Run(benchmark::State& st, const std::vector<std::string>& inputs) {
  std::string path, err;
  size_t bytes = 0;
  for (const auto& s : inputs) bytes += s.size();
  for (auto _ : st) {
    for (const auto& s : inputs) {
      path = s;
      headroom::CanonicalizePath(&path, &err);
      benchmark::DoNotOptimize(path.data());
    }
  }
  st.SetItemsProcessed(static_cast<int64_t>(st.iterations() * inputs.size()));
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * bytes));
}

void BM_CanonicalizeClean(benchmark::State& st) {
  Run(st, {"obj/content/browser/renderer_host/render_widget_host_impl.o",
           "gen/third_party/blink/renderer/bindings/core/v8/v8_element.cc", "libbase.so", "a/b/c/d/e/f/g.h"});
}
BENCHMARK(BM_CanonicalizeClean);

void BM_CanonicalizeDotDot(benchmark::State& st) {
  Run(st, {"../../base/allocator/../memory/./ref_counted.h", "./obj/./ui/gfx/../views/view.o",
           "../../third_party//abseil-cpp/absl/strings/../base/config.h", "a/./b/../../c/d/../e.cc"});
}
BENCHMARK(BM_CanonicalizeDotDot);

void BM_CanonicalizeLeadingParents(benchmark::State& st) {
  Run(st, {"../../src/chrome/browser/ui/browser.cc", "../../../../out/Default/gen/x.h",
           "../../v8/src/objects/objects.cc", "../../skia/ext/../../third_party/skia/include/core/SkCanvas.h"});
}
BENCHMARK(BM_CanonicalizeLeadingParents);

}  // namespace
