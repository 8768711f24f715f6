// libFuzzer target: ManifestParser::ParseTest on arbitrary build.ninja text (includes always miss).
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "headroom/manifest/manifest_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  // A newer ninja_required_version is fatal (exit(1)) by design, as in ninja; such inputs are skipped and kept
  // out of the corpus. The version check itself is unit-tested.
  if (input.find("ninja_required_version") != std::string::npos) return -1;
  for (auto action : {headroom::PhonyCycleAction::kWarn, headroom::PhonyCycleAction::kError}) {
    headroom::State state;
    headroom_fuzz::EmptyDisk disk;
    headroom::ManifestParserOptions options;
    options.phony_cycle_action = action;
    options.quiet = true;
    headroom::ManifestParser parser(&state, &disk, options);
    std::string err;
    parser.ParseTest(input, &err);
  }
  return 0;
}
