// bench/micro_manifest.cc: Google Benchmark micro-benchmarks of the manifest lexer and parser on a generated,
// Chromium-shaped manifest held in memory (no disk access while timing).
#include <benchmark/benchmark.h>

#include <string>

#include "bench_manifest_text.h"
#include "headroom/graph/graph.h"
#include "headroom/manifest/lexer.h"
#include "headroom/manifest/manifest_parser.h"
#include "headroom/util/disk.h"

namespace {

using headroom::Lexer;
using Token = headroom::Lexer::Token;

// Drives the lexer the way the parser does (identifiers, values, paths), without building a graph.
void BM_Lexer(benchmark::State& st) {
  const std::string text = headroom_bench::ChromiumLikeManifest(static_cast<int>(st.range(0)), 40);
  headroom::LexedString value;
  std::string err;
  size_t tokens = 0;
  for (auto _ : st) {
    Lexer lexer("build.ninja", text);
    for (;;) {
      Token t = lexer.ReadToken();
      ++tokens;
      if (t == Token::kEof || t == Token::kError) break;
      std::string_view ident;
      switch (t) {
        case Token::kIdent:  // name = value
          lexer.ReadToken();
          lexer.ReadValue(&value, &err);
          break;
        case Token::kIndent:
          lexer.ReadIdent(&ident);
          lexer.ReadToken();
          lexer.ReadValue(&value, &err);
          break;
        case Token::kRule:
        case Token::kPool:
          lexer.ReadIdent(&ident);
          lexer.ReadToken();
          break;
        case Token::kBuild:
        case Token::kDefault:
          for (;;) {  // outputs / defaults, ':' rule, inputs, '||' order-only, up to the newline
            do { value.Clear(); lexer.ReadPath(&value, &err); } while (!value.empty());
            Token sep = lexer.ReadToken();
            if (sep == Token::kColon) { lexer.ReadIdent(&ident); continue; }
            if (sep == Token::kPipe || sep == Token::kPipe2 || sep == Token::kPipeAt) continue;
            break;
          }
          break;
        default:
          break;
      }
      benchmark::DoNotOptimize(value);
    }
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * static_cast<int64_t>(text.size()));
  st.counters["tokens/iter"] = static_cast<double>(tokens) / static_cast<double>(st.iterations());
}
BENCHMARK(BM_Lexer)->Arg(100)->Arg(500)->Unit(benchmark::kMillisecond);

// Full parse into a State: rules, bindings, path canonicalisation, node interning.
void BM_ManifestParse(benchmark::State& st) {
  const int targets = static_cast<int>(st.range(0));
  const std::string text = headroom_bench::ChromiumLikeManifest(targets, 40);
  headroom::RealDiskInterface disk;
  for (auto _ : st) {
    headroom::State state;
    headroom::ManifestParser parser(&state, &disk);
    std::string err;
    if (!parser.Parse("build.ninja", text, &err)) {
      st.SkipWithError(err.c_str());
      break;
    }
    benchmark::DoNotOptimize(state);
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations()) * static_cast<int64_t>(text.size()));
  st.counters["edges"] = targets * 42.0;
}
BENCHMARK(BM_ManifestParse)->Arg(100)->Arg(500)->Unit(benchmark::kMillisecond);

}  // namespace
