// The command line: ninja's options and tools, headroom's memory options, and the top-level run.
#pragma once

namespace headroom {

// Parses argv as ninja 1.13.2 does (plus headroom's options) and runs; returns the exit code.
int RunCli(int argc, char** argv);

}  // namespace headroom
