// Options of one build run, filled by the command line and read by the builder and its helpers.
#pragma once

#include <cstdint>
#include <string>

namespace headroom {

struct MemoryConfig {
  bool enabled = true;              // --no-memory turns every memory decision off.
  uint64_t budget_bytes = 0;        // --mem-budget as bytes; 0 = derive from the machine.
  double budget_fraction = 0.0;     // --mem-budget=N% as 0..1; 0 = unset.
  uint64_t reserve_bytes = 0;       // --mem-reserve; 0 = default.
  size_t remote_jobs = 0;           // --remote-jobs: the compile farm's slots; 0 = read distcc's host list
                                    // (docs/scale-out.md), and no remote pool when that says nothing either.
  bool strict_remote = false;       // --strict-remote: a launcher's farm failure fails the job, no local retry
  int cpus = 0;                     // the CPUs the build may use (UsableCpus); 0 = unknown: no CPU cap
};

struct BuildConfig {
  enum class Verbosity { kQuiet, kNoStatusUpdate, kNormal, kVerbose };
  Verbosity verbosity = Verbosity::kNormal;
  bool dry_run = false;
  int parallelism = 1;
  bool parallelism_from_cli = false;  // -j given (disables the jobserver).
  int failures_allowed = 1;           // -k; INT_MAX for unlimited.
  double max_load_average = -0.0;     // -l; <= 0 disables.
  bool explain = false;               // -d explain
  bool keep_depfile = false;          // -d keepdepfile
  bool keep_rsp = false;              // -d keeprsp
  bool stats = false;                 // -d stats
  MemoryConfig memory;
  // --content-hash: an input whose mtime moved but whose content did not leaves its edge clean
  // (docs/cached-builds.md); off by default.
  bool content_hash = false;
  // --jobserver[=fifo|pipe]: serve a jobserver to the jobs (docs/jobserver.md); off by default.
  enum class ServeJobserver { kOff, kFifo, kPipe };
  ServeJobserver serve_jobserver = ServeJobserver::kOff;
  // --deadline=DURATION as ms from the start of the run; 0 = none (docs/deadline.md).
  int64_t deadline_ms = 0;
};

}  // namespace headroom
