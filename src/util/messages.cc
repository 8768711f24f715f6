// ninja-style diagnostics on stderr and info lines on stdout; edit distance for spelling hints.
#include "headroom/util/messages.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

#include <unistd.h>  // _exit

namespace headroom {

void PrintError(std::string_view message) {
  fflush(stdout);
  fprintf(stderr, "ninja: error: %.*s\n", static_cast<int>(message.size()), message.data());
}

void PrintWarning(std::string_view message) {
  fflush(stdout);
  fprintf(stderr, "ninja: warning: %.*s\n", static_cast<int>(message.size()), message.data());
}

namespace {
FatalHandler g_fatal_handler = nullptr;
}  // namespace

void SetFatalHandler(FatalHandler handler) { g_fatal_handler = handler; }

void Fatal(std::string_view message) {
  if (g_fatal_handler != nullptr) {
    g_fatal_handler(message);
    std::abort();  // a handler that returns breaks [[noreturn]]
  }
  fflush(stdout);
  fprintf(stderr, "ninja: fatal: %.*s\n", static_cast<int>(message.size()), message.data());
  fflush(stderr);
  // Skip destructors: a fatal error may come from deep inside a half-built state.
  _exit(1);
}

void PrintInfo(std::string_view message) {
  fprintf(stdout, "ninja: %.*s\n", static_cast<int>(message.size()), message.data());
  fflush(stdout);
}

int EditDistance(std::string_view a, std::string_view b, bool allow_replacements, int max_distance) {
  // Two-row dynamic programme over prefixes of a and b.
  const size_t m = a.size(), n = b.size();
  std::vector<int> previous(n + 1), current(n + 1);
  for (size_t j = 0; j <= n; ++j) previous[j] = static_cast<int>(j);
  for (size_t i = 1; i <= m; ++i) {
    current[0] = static_cast<int>(i);
    int row_best = current[0];
    for (size_t j = 1; j <= n; ++j) {
      if (allow_replacements) {
        current[j] = std::min(previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1),
                              std::min(previous[j], current[j - 1]) + 1);
      } else if (a[i - 1] == b[j - 1]) {
        current[j] = previous[j - 1];
      } else {
        current[j] = std::min(previous[j], current[j - 1]) + 1;
      }
      row_best = std::min(row_best, current[j]);
    }
    if (max_distance && row_best > max_distance) return max_distance + 1;
    std::swap(previous, current);
  }
  return previous[n];
}

}  // namespace headroom
