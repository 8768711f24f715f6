// ninja-style diagnostics: "ninja: error: ...", "ninja: warning: ...", "ninja: fatal: ..." on stderr.
// The program name stays "ninja" because generators and users match on it.
#pragma once

#include <string_view>

#include <fmt/format.h>

namespace headroom {

void PrintError(std::string_view message);
void PrintWarning(std::string_view message);
// Prints "ninja: fatal: message" and exits 1 without running destructors (or calls the fatal handler).
[[noreturn]] void Fatal(std::string_view message);
// For fuzz targets only: a fatal error that ninja also makes fatal (a cycle in rule variables, a newer
// ninja_required_version) is expected there, and an exit would end the whole fuzzing run without saving the
// input. The handler, if set, runs instead of printing and exiting; it must not return (it throws).
using FatalHandler = void (*)(std::string_view message);
void SetFatalHandler(FatalHandler handler);
// Prints "ninja: message" on stdout (Entering directory, no work to do, build stopped).
void PrintInfo(std::string_view message);

template <typename... Args>
void Error(fmt::format_string<Args...> format, Args&&... args) {
  PrintError(fmt::format(format, std::forward<Args>(args)...));
}
template <typename... Args>
void Warning(fmt::format_string<Args...> format, Args&&... args) {
  PrintWarning(fmt::format(format, std::forward<Args>(args)...));
}

// Edit distance used for "did you mean" hints (bounded: stops counting at max_distance).
int EditDistance(std::string_view a, std::string_view b, bool allow_replacements = true, int max_distance = 0);

}  // namespace headroom
