// libFuzzer target: ManifestParser::ParseTest on arbitrary build.ninja text (includes always miss).
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "headroom/manifest/manifest_parser.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  headroom_fuzz::CatchFatalErrors();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  for (auto action : {headroom::PhonyCycleAction::kWarn, headroom::PhonyCycleAction::kError}) {
    headroom::State state;
    headroom_fuzz::EmptyDisk disk;
    headroom::ManifestParserOptions options;
    options.phony_cycle_action = action;
    options.quiet = true;
    headroom::ManifestParser parser(&state, &disk, options);
    std::string err;
    try {
      parser.ParseTest(input, &err);
    } catch (const headroom_fuzz::FatalExit&) {
      // Fatal in ninja too (e.g. "cycle in rule variables"); what matters is that unwinding is clean.
    }
  }
  return 0;
}
