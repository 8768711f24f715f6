// libFuzzer target: DyndepParser::ParseTest against a small fixed graph whose edges name a dyndep file.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_support.h"
#include "headroom/manifest/dyndep_parser.h"
#include "headroom/manifest/manifest_parser.h"

namespace {
// Outputs out1..out3 and phony p use dyndep file dd, so statements naming them get past the lookup.
constexpr char kManifest[] =
    "rule r\n"
    "  command = touch $out\n"
    "build dd: r\n"
    "build out1: r in1 || dd\n"
    "  dyndep = dd\n"
    "build out2 | out2.imp: r in2 || dd\n"
    "  dyndep = dd\n"
    "build out3: r out1 out2 || dd\n"
    "  dyndep = dd\n"
    "build p: phony out3 || dd\n"
    "  dyndep = dd\n";
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  headroom_fuzz::CatchFatalErrors();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  headroom::State state;
  headroom_fuzz::EmptyDisk disk;
  std::string err;
  headroom::ManifestParser manifest(&state, &disk);
  if (!manifest.ParseTest(kManifest, &err)) std::abort();

  headroom::DyndepFile file;
  headroom::DyndepParser parser(&state, &disk, &file);
  try {
    parser.ParseTest(std::string(reinterpret_cast<const char*>(data), size), &err);
  } catch (const headroom_fuzz::FatalExit&) {
    // An error ninja also makes fatal; unwinding must still be clean.
  }
  return 0;
}
