// Parser for `deps = msvc` output: cl.exe / clang-cl /showIncludes lines become dependencies, and the rest is
// what the user sees, the compiler's echo of its source file name dropped (ninja 1.13.2's rules).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace headroom {

struct ShowIncludes {
  std::string output;                 // the lines left for the console, each ending in "\n"
  std::vector<std::string> includes;  // canonical, sorted, no duplicates, system headers left out
};

// Lines end at "\n", "\r" or "\r\n". A line that starts with `prefix` ("Note: including file: " when empty)
// and names a path after it (leading spaces skipped) is an include. Until the first include, a line ending
// in .c, .cc, .cxx, .cpp or .c++ (any case) is the compiler's echo of its input and is dropped. Returns false
// with *err set when an include cannot be canonicalised.
bool ParseShowIncludes(std::string_view output, std::string_view prefix, ShowIncludes* result, std::string* err);

}  // namespace headroom
