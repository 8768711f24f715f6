// ProcessGroupSampler: measures jobs without cgroups by summing the resident memory of every process in
// each job's process group (orphaned grandchildren stay in the group), keeping the maximum seen.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "headroom/memory/kernel_file.h"

namespace headroom {

// Sampling more often costs CPU; less often misses short peaks. 200 ms costs well under 1% of a core
// (see docs/memory-observation.md for the measurement).
inline constexpr int kDefaultSampleIntervalMs = 200;

// Reading every /proc/PID/stat costs ~20 us each and dominates the sampler's cost, so the process group of
// already-known processes is re-checked only this often (5 s at the default interval). New pids are always
// classified, and that is how job processes appear (they are forked after the job's setpgid).
inline constexpr int kDefaultFullRescanEvery = 25;

class ProcessGroupSampler {
 public:
  // proc_dir: "/proc", or a fake tree in tests. Every full_rescan_every-th Sample() re-reads the process
  // group of every process; the others only look at processes that are new since the last scan.
  explicit ProcessGroupSampler(std::string proc_dir = "/proc", int full_rescan_every = kDefaultFullRescanEvery);

  void Track(pid_t pgid);
  void Untrack(pid_t pgid);
  // One pass over <proc>/[0-9]* for all tracked groups: updates each group's current and peak bytes.
  void Sample();

  uint64_t CurrentBytes(pid_t pgid) const;
  uint64_t PeakBytes(pid_t pgid) const;
  size_t ProcessCount(pid_t pgid) const;

 private:
  struct Process {
    pid_t pgid = 0;
    uint64_t seen_in_scan = 0;
    KernelFile statm;  // kept open only for members of tracked groups
  };
  struct Group {
    uint64_t current_bytes = 0;
    uint64_t peak_bytes = 0;
    size_t processes = 0;
  };

  void Classify(pid_t pid, Process& process);
  uint64_t ResidentBytes(Process& process);

  std::string proc_dir_;
  int full_rescan_every_;
  uint64_t scan_count_ = 0;
  long page_size_;
  std::unordered_map<pid_t, Process> processes_;
  std::map<pid_t, Group> groups_;
};

// The process group from the text of /proc/PID/stat ("pid (comm) state ppid pgrp ..."); -1 if malformed.
pid_t ParseStatProcessGroup(std::string_view stat);
// Resident pages (second field) from the text of /proc/PID/statm; nullopt if malformed.
std::optional<uint64_t> ParseStatmResidentPages(std::string_view statm);

}  // namespace headroom
