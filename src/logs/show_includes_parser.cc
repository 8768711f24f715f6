// `deps = msvc` output parsing: /showIncludes lines to dependencies, the rest to the console.
#include "headroom/logs/show_includes_parser.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "headroom/util/path.h"

namespace headroom {
namespace {

constexpr std::string_view kEnglishPrefix = "Note: including file: ";

std::string Lowercase(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower;
}

// The path a /showIncludes line names, or "" when the line is not one. The line must go on past the prefix
// and name something after the spaces that indent nested includes.
std::string_view IncludedPath(std::string_view line, std::string_view prefix) {
  if (line.size() <= prefix.size() || line.substr(0, prefix.size()) != prefix) return {};
  std::string_view path = line.substr(prefix.size());
  path.remove_prefix(std::min(path.find_first_not_of(' '), path.size()));
  return path;
}

// cl.exe prints the name of the file it compiles before anything else; a heuristic, as in ninja.
bool IsSourceFileEcho(std::string_view line) {
  static constexpr std::array<std::string_view, 5> kSourceExtensions = {".c", ".cc", ".cxx", ".cpp", ".c++"};
  const std::string lower = Lowercase(line);
  return std::any_of(kSourceExtensions.begin(), kSourceExtensions.end(),
                     [&](std::string_view extension) { return lower.ends_with(extension); });
}

// Toolchain headers are not part of the build's own dependencies.
bool IsSystemInclude(std::string_view path) {
  const std::string lower = Lowercase(path);
  return lower.find("program files") != std::string::npos || lower.find("microsoft visual studio") != std::string::npos;
}

}  // namespace

bool ParseShowIncludes(std::string_view output, std::string_view prefix, ShowIncludes* result, std::string* err) {
  if (prefix.empty()) prefix = kEnglishPrefix;
  bool seen_include = false;
  size_t start = 0;
  while (start < output.size()) {
    size_t end = std::min(output.find_first_of("\r\n", start), output.size());
    const std::string_view line = output.substr(start, end - start);
    const std::string_view path = IncludedPath(line, prefix);
    if (!path.empty()) {
      seen_include = true;
      std::string canonical(path);
      if (!CanonicalizePath(&canonical, err)) return false;
      if (!IsSystemInclude(canonical)) result->includes.push_back(std::move(canonical));
    } else if (seen_include || !IsSourceFileEcho(line)) {
      result->output.append(line);
      result->output.push_back('\n');
    }
    // One line ending: "\r", "\n" or "\r\n".
    if (end < output.size() && output[end] == '\r') ++end;
    if (end < output.size() && output[end] == '\n') ++end;
    start = end;
  }
  std::sort(result->includes.begin(), result->includes.end());
  result->includes.erase(std::unique(result->includes.begin(), result->includes.end()), result->includes.end());
  return true;
}

}  // namespace headroom
