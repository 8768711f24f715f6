// Owns creating a job's child process: `/bin/sh -c <command>` with reset signals, an empty mask,
// its own process group and stdio on the output pipe (or inherited, for console jobs).
#pragma once

#include <sys/types.h>

#include <string>

#include "headroom/exec/process_runner.h"

namespace headroom::exec_internal {

// Starts the child. `output_write_fd` becomes its stdout and stderr (ignored for console jobs).
// With options.cgroup_dir set, the child joins that cgroup before exec and any failure to do so
// is reported here. Returns the pid, or -1 with *err set (no child is left behind).
pid_t LaunchChild(const std::string& command, const JobStartOptions& options, int output_write_fd,
                  std::string* err);

}  // namespace headroom::exec_internal
