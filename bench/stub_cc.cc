// bench/stub_cc.cc: the stand-in compiler/linker for generated benchmark manifests. It does no real work:
// it writes its output (and a gcc-style depfile) so both build tools see ordinary compile/link edges.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

bool IsSource(const std::string& path) {
  const size_t dot = path.rfind('.');
  return dot != std::string::npos && (path.compare(dot, std::string::npos, ".cc") == 0 ||
                                      path.compare(dot, std::string::npos, ".c") == 0);
}

// The files a source names in its `#include "..."` lines (one level), found next to it or in an -IDIR.
void AddIncludes(const std::string& source, const std::vector<std::string>& include_dirs,
                 std::vector<std::string>* reads) {
  FILE* f = fopen(source.c_str(), "r");
  if (!f) return;
  const size_t slash = source.rfind('/');
  const std::string own_dir = slash == std::string::npos ? "" : source.substr(0, slash + 1);
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "#include \"", 10) != 0) continue;
    const char* name = line + 10;
    const char* end = strchr(name, '"');
    if (!end) continue;
    const std::string header(name, end);
    std::string found = own_dir + header;
    for (size_t d = 0; access(found.c_str(), F_OK) != 0 && d < include_dirs.size(); ++d)
      found = include_dirs[d] + "/" + header;
    if (access(found.c_str(), F_OK) == 0) reads->push_back(found);
  }
  fclose(f);
}

}  // namespace

// Usage: stub_cc -o OUT [-d DEPFILE] [-I HEADER]... [-IDIR]... [@RSPFILE] [INPUT]...
// Inputs named in @RSPFILE (whitespace-separated) count as inputs too; other -flags are ignored. The depfile lists every input,
// every -I header and the headers a .c/.cc input #includes (found beside it or in an -IDIR), which is how a real compiler
// reports what it read.
int main(int argc, char** argv) {
  const char* out = nullptr;
  const char* dep = nullptr;
  std::vector<std::string> reads;
  std::vector<std::string> include_dirs;
  std::vector<std::string> sources;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "-o") && i + 1 < argc) {
      out = argv[++i];
    } else if (!strcmp(argv[i], "-d") && i + 1 < argc) {
      dep = argv[++i];
    } else if (!strcmp(argv[i], "-I") && i + 1 < argc) {
      reads.emplace_back(argv[++i]);
    } else if (!strncmp(argv[i], "-I", 2) && argv[i][2]) {
      include_dirs.emplace_back(argv[i] + 2);
    } else if (argv[i][0] == '@') {
      FILE* rsp = fopen(argv[i] + 1, "r");
      if (!rsp) { perror(argv[i] + 1); return 1; }
      char word[4096];
      while (fscanf(rsp, "%4095s", word) == 1)
        if (word[0] != '-') reads.emplace_back(word);
      fclose(rsp);
    } else if (argv[i][0] != '-') {  // other flags (-c, -D..., -O2) are not files
      reads.emplace_back(argv[i]);
      if (IsSource(reads.back())) sources.push_back(reads.back());
    }
  }
  for (const std::string& source : sources) AddIncludes(source, include_dirs, &reads);
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
