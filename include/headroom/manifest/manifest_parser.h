// Parses build.ninja (and include/subninja files) into a State.
#pragma once

#include <string>

#include "headroom/graph/graph.h"

namespace headroom {

class DiskInterface;

enum class PhonyCycleAction { kWarn, kError };

struct ManifestParserOptions {
  PhonyCycleAction phony_cycle_action = PhonyCycleAction::kWarn;
};

class ManifestParser {
 public:
  ManifestParser(State* state, DiskInterface* disk, ManifestParserOptions options = {});

  // Loads `filename`; on error *err holds ninja's "file:line: message\n<line>\n   ^ near here".
  bool Load(const std::string& filename, std::string* err);
  // Parses `input` as if it were the file "input" (tests).
  bool ParseTest(const std::string& input, std::string* err);

 private:
  State* state_;
  DiskInterface* disk_;
  ManifestParserOptions options_;
};

}  // namespace headroom
