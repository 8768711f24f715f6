// Top-level run: option parsing, manifest loading, tools and the build.
#include "headroom/cli/cli.h"

#include <cstdio>
#include <cstring>

namespace headroom {

int RunCli(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--version") == 0) {
    printf("1.13.2\n");
    return 0;
  }
  fprintf(stderr, "ninja: error: not implemented yet\n");
  return 1;
}

}  // namespace headroom
