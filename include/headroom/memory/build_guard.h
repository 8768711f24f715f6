// The build guard: the per-build cgroup capped at the budget, so that when the build runs out of memory its
// tasks wait (v1: the group's OOM killer is off) or are throttled (v2: memory.high below memory.max) and
// headroom, not the kernel, chooses which job pays. A watcher process undoes the guard if headroom dies.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "headroom/memory/cgroup_layout.h"
#include "headroom/memory/kernel_file.h"

namespace headroom {

struct BuildGuardOptions {
  CgroupVersion version = CgroupVersion::kNone;
  std::string group_dir;              // the per-build cgroup (JobCgroups::build_dir()), jobs in its children
  std::string v1_freezer_group_dir;   // v1: the matching freezer cgroup, whose children undo thaws
  uint64_t limit_bytes = 0;           // v1 memory.limit_in_bytes, v2 memory.max
  // v2: memory.high sits this far below memory.max (0: an eighth of the limit, at least 32 MiB), so the
  // kernel throttles the build and headroom has ticks to act before the group's OOM killer would.
  uint64_t v2_high_gap_bytes = 0;
  // v2: throttling counts as a stall only while the group's PSI "some" share of the last interval is at
  // least this (percent); without a readable memory.pressure, throttling alone counts.
  double v2_stall_pressure_pct = 10.0;
  bool start_watcher = true;          // false only in tests that check the files alone
};

// What one check of the guard found.
struct GuardCheck {
  bool stalled = false;            // tasks wait at the limit (v1) or are throttled at memory.high (v2)
  uint64_t kernel_oom_kills = 0;   // v2: kills the group's OOM killer made since the last check (v1: none)
  std::string detail;              // what was seen, for -d explain and the trace
};

// What undoing the guard writes, kept apart so the watcher can do it after headroom is gone.
struct GuardUndoPlan {
  CgroupVersion version = CgroupVersion::kNone;
  std::string group_dir;
  std::string v1_freezer_group_dir;
};

// Lifts the limit, gives the kernel its OOM killer back, thaws every job cgroup under the group (v1 freezer
// or v2 cgroup.freeze) and SIGCONTs every task in it. Best effort, every step tried; safe to repeat.
void UndoGuard(const GuardUndoPlan& plan);

class BuildGuard {
 public:
  // Caps the group and starts the watcher. nullptr with *err when the group's files cannot be written.
  static std::unique_ptr<BuildGuard> Arm(const BuildGuardOptions& options, std::string* err);
  // Release()s.
  ~BuildGuard();
  BuildGuard(const BuildGuard&) = delete;
  BuildGuard& operator=(const BuildGuard&) = delete;

  // Once per tick. v1: drains the OOM eventfd and reads under_oom. v2: memory.events (high, max, oom,
  // oom_kill), memory.current against memory.high, and the group's PSI.
  GuardCheck Check(int64_t now_ms);
  // A count that rises each time a charge met the build's limit: v1 memory.failcnt, v2 memory.events "max".
  // At the limit page faults wait, but a charge made inside a system call (a write to a tmpfs file) fails
  // with ENOMEM, so a job that failed while this rose may have failed because of the cap. It also rises
  // when the kernel merely reclaimed page cache to make room, so it says "may", never "did".
  // limit_hits(): as of the last Check() (each tick reads it); ReadLimitHits(): read now, e.g. at a job's end.
  uint64_t limit_hits() const { return limit_hits_; }
  uint64_t ReadLimitHits();
  // Undoes the guard now (the build is stopping: nothing may stay paused) and dismisses the watcher.
  void Release();

  bool armed() const { return armed_; }
  uint64_t limit_bytes() const { return options_.limit_bytes; }
  uint64_t high_bytes() const { return high_bytes_; }  // v2 only
  // One line for -d explain and the summary, e.g. "build guard: cgroup v1, jobs capped at 1.4 GiB, ...".
  std::string Describe() const;
  pid_t watcher_pid() const { return watcher_pid_; }
  // v1: an eventfd the kernel signals when the build's tasks start waiting at the limit (-1 elsewhere);
  // a caller may poll it to check sooner than its next tick.
  int notify_fd() const { return oom_eventfd_; }
  // Tests: closes the keep-alive pipe the way headroom's death would, and waits for the watcher's undo.
  void AbandonWatcherForTest();

 private:
  explicit BuildGuard(BuildGuardOptions options) : options_(std::move(options)) {}
  bool ArmV1(std::string* err);
  bool ArmV2(std::string* err);
  bool StartWatcher(std::string* err);
  void DismissWatcher(char verdict);
  GuardCheck CheckV1();
  GuardCheck CheckV2(int64_t now_ms);
  void NoteLimitHits(std::optional<uint64_t> hits);
  GuardUndoPlan UndoPlan() const;

  BuildGuardOptions options_;
  bool armed_ = false;
  uint64_t high_bytes_ = 0;
  int oom_eventfd_ = -1;      // v1: signalled by the kernel when the group's tasks start waiting
  int oom_control_fd_ = -1;   // v1: kept open, as the eventfd registration refers to it
  KernelFile oom_control_;
  KernelFile events_;
  KernelFile current_;
  KernelFile pressure_;
  KernelFile failcnt_;        // v1: memory.failcnt (v2's count is memory.events "max")
  uint64_t limit_hits_ = 0;   // never goes down, whatever a read returns
  uint64_t last_high_ = 0, last_max_ = 0, last_oom_ = 0, last_oom_kill_ = 0;
  std::optional<uint64_t> last_pressure_total_us_;
  int64_t last_check_ms_ = -1;
  pid_t watcher_pid_ = -1;
  int watcher_keepalive_fd_ = -1;  // its other end is the watcher's; EOF without a verdict means undo
};

}  // namespace headroom
