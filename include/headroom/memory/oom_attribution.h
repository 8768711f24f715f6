// OOM attribution: did the kernel OOM-kill a finished job, and how sure are we? Exit status 137 alone
// is ambiguous (a user's kill -9 looks the same), so the verdict carries its evidence.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "headroom/memory/kernel_file.h"

namespace headroom {

enum class OomEvidence {
  kNone,    // no sign of an OOM kill
  kWeak,    // SIGKILL while the machine-wide oom_kill counter rose: some process was OOM-killed, maybe this one
  kStrong,  // the job's own cgroup counted an OOM kill
};

const char* OomEvidenceName(OomEvidence evidence);  // "none", "weak", "strong"

struct OomFacts {
  std::optional<uint64_t> cgroup_oom_kills;          // the job cgroup's oom_kill count, if it had one
  bool killed_by_sigkill = false;                    // the job's top process died of SIGKILL
  bool exited_non_zero = false;                      // it exited with a failure (nvcc does when its cicc was killed)
  std::optional<uint64_t> system_oom_kills_at_start;  // /proc/vmstat oom_kill when the job started
  std::optional<uint64_t> system_oom_kills_at_end;    // ... and when it finished
};

struct OomVerdict {
  bool oom_killed = false;
  OomEvidence evidence = OomEvidence::kNone;
  std::string explanation;  // one line for logs and error messages
};

// A job cgroup's counter is decisive either way, even when the top process was not the victim (nvcc
// exits 1 after its cicc was killed). Without a cgroup a SIGKILL or a failed exit plus a rise of the system
// counter during the job counts, and only as weak evidence: another process may have been the victim (a real
// failure at such a moment then costs one retry).
OomVerdict AttributeOom(const OomFacts& facts);

// The machine-wide count of OOM kills (/proc/vmstat oom_kill, Linux >= 4.13).
class SystemOomCounter {
 public:
  explicit SystemOomCounter(const std::string& root = "") : vmstat_(root + "/proc/vmstat") {}
  std::optional<uint64_t> Read();

 private:
  KernelFile vmstat_;
};

}  // namespace headroom
