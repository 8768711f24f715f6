// bench/stub_cc.cc: the stand-in compiler/linker for generated benchmark manifests. It does no real work:
// it writes its output (and a gcc-style depfile) so both build tools see ordinary compile/link edges.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

// Usage: stub_cc -o OUT [-d DEPFILE] [-I HEADER]... [@RSPFILE] [INPUT]...
// Inputs named in @RSPFILE (whitespace-separated) count as inputs too; other -flags are ignored. The depfile lists every input
// and every -I header, which is how a real compiler reports what it read.
int main(int argc, char** argv) {
  const char* out = nullptr;
  const char* dep = nullptr;
  std::vector<std::string> reads;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "-o") && i + 1 < argc) {
      out = argv[++i];
    } else if (!strcmp(argv[i], "-d") && i + 1 < argc) {
      dep = argv[++i];
    } else if (!strcmp(argv[i], "-I") && i + 1 < argc) {
      reads.emplace_back(argv[++i]);
    } else if (argv[i][0] == '@') {
      FILE* rsp = fopen(argv[i] + 1, "r");
      if (!rsp) { perror(argv[i] + 1); return 1; }
      char word[4096];
      while (fscanf(rsp, "%4095s", word) == 1)
        if (word[0] != '-') reads.emplace_back(word);
      fclose(rsp);
    } else if (argv[i][0] != '-') {  // other flags (-c, -D..., -O2) are not files
      reads.emplace_back(argv[i]);
    }
  }
  if (!out) { fprintf(stderr, "stub_cc: no -o\n"); return 2; }
  FILE* f = fopen(out, "w");
  if (!f) { perror(out); return 1; }
  fprintf(f, "stub %zu inputs\n", reads.size());
  fclose(f);
  if (dep) {
    FILE* d = fopen(dep, "w");
    if (!d) { perror(dep); return 1; }
    fprintf(d, "%s:", out);
    for (const std::string& r : reads) fprintf(d, " \\\n  %s", r.c_str());
    fputc('\n', d);
    fclose(d);
  }
  return 0;
}
