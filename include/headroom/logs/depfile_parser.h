// Parser for the Makefile subset that gcc/clang write as depfiles (-MD/-MMD/-MF).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace headroom {

class DepfileParser {
 public:
  // Parses in place (unescaping rewrites `content`); the views point into it.
  // Empty content is valid. Errors: "expected ':' in depfile", "inputs may not also have inputs".
  bool Parse(std::string* content, std::string* err);

  std::vector<std::string_view> outs;
  std::vector<std::string_view> ins;
};

}  // namespace headroom
