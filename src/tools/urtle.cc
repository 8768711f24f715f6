// `-t urtle`: a hidden easter egg, as ninja has one. This one is headroom's own: a turtle that
// keeps some memory in reserve.
#include <cstdio>

#include "headroom/tools/tools.h"

namespace headroom {

int ToolUrtle(const ToolContext&, const ToolArgs&) {
  static const char kTurtle[] =
      "                 ____\n"
      "      .-\"\"-.   .'    `.     slow and steady\n"
      "     / o  o \\ /  .--.  \\    builds the race:\n"
      "     \\  --  /|  ( RAM)  |   never more jobs\n"
      "      `-..-' \\  '--'  /    than memory fits.\n"
      "        ||    `-.__.-'\n"
      "       _||_   _/    \\_       -- headroom\n";
  fputs(kTurtle, stdout);
  return 0;
}

}  // namespace headroom
