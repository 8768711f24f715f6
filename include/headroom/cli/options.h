// Command-line options: ninja 1.13.2's flags (same parsing, permutation and error texts) plus
// headroom's memory flags, HEADROOM_FLAGS and MAX_JOBS.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "headroom/build/build_config.h"

namespace headroom {

struct Options {
  std::string input_file = "build.ninja";
  std::string working_dir;
  std::string tool;                 // -t NAME (may be "", which is an unknown tool)
  bool has_tool = false;            // -t was given
  std::vector<std::string> args;    // targets, or the tool's own arguments
  bool phony_cycle_should_err = false;
  std::string trace_path;           // --trace=FILE
  std::string report_path;          // --report=FILE
  std::string mem_log_path;         // --mem-log=FILE: the memory-decision log; "" = off
  std::string store_dir;            // the per-user history store (absolute); "" = none (--no-store)
};

// Parses argv (after HEADROOM_FLAGS and MAX_JOBS are applied). Returns an exit code to exit
// with right away (help, version, errors), or nullopt to carry on.
std::optional<int> ReadFlags(int argc, char** argv, Options* options, BuildConfig* config);

// ninja's default -j: CPUs + 2 (2 for one CPU, 3 for two), CPUs from affinity and cgroup quota.
// The CPUs this process may use: its affinity mask, capped by a cgroup CPU quota.
int UsableCpus();
// ninja's default -j for that many CPUs.
int GuessParallelism(int processors);

// Usage text printed by -h.
void PrintUsage(const BuildConfig& config);

}  // namespace headroom
