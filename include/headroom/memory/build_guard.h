// The build guard: the group the builds of one cgroup share, capped once, so that when they run out of memory
// their tasks wait (v1: the group's OOM killer is off) or are throttled (v2: memory.high below memory.max) and a
// build, not the kernel, chooses which job pays. A watcher process undoes this build's part if headroom dies.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "headroom/memory/cgroup_layout.h"
#include "headroom/memory/cgroup_tree.h"
#include "headroom/memory/kernel_file.h"

namespace headroom {

struct BuildGuardOptions {
  CgroupVersion version = CgroupVersion::kNone;
  // The capped group: the one the builds of a cgroup share (JobCgroups::guard_dir()), or this build's own.
  std::string group_dir;
  // This build's group inside it, jobs in its children ("" = group_dir is this build's alone).
  std::string build_dir;
  std::string v1_freezer_group_dir;   // v1: this build's freezer cgroup, whose children undo thaws
  // Where the watcher moves the jobs a dead headroom left in the shared group (JobCgroups::EvacuationDir()),
  // and (v1) their freezer cgroups' tasks; "" leaves them in place until they end.
  std::string evacuate_dir;
  std::string v1_freezer_evacuate_dir;
  // v1 memory.limit_in_bytes, v2 memory.max, when this build is the first to cap the group; a build that finds
  // it capped joins and keeps the cap it finds, or raises it to this when this is higher (limit_bytes() says
  // which).
  uint64_t limit_bytes = 0;
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
  std::string build_dir;             // "" = group_dir is this build's alone
  std::string v1_freezer_group_dir;
  std::string evacuate_dir;
  std::string v1_freezer_evacuate_dir;
};

// Thaws every job cgroup of this build (v1 freezer or v2 cgroup.freeze) and SIGCONTs every task in them; then,
// when no other build's group is in the shared group (this build is the last), lifts the limit and gives the
// kernel its OOM killer back. A build leaving before others never lifts the cap under them. Serialised with
// the other builds' arming and leaving by the group's lock. Best effort, every step tried; safe to repeat.
void UndoGuard(const GuardUndoPlan& plan);
// Whether this build is the only one in the shared group (after sweeping the groups of dead builds).
bool LastBuildInGroup(const GuardUndoPlan& plan);

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
  // Builds that share the group see the same stall; one kill at a time among them. TakeKillTurn: true when this
  // build may kill now (it holds the group's lock, or already did); false while another build holds it, i.e. its
  // victim's memory is still being freed. EndKillTurn once this build's victim has ended (or it chose none).
  // The lock is the group directory's flock, so a build that dies gives its turn up with it.
  bool TakeKillTurn();
  void EndKillTurn();
  // With the turn: whether the job that should pay for this stall runs in another build of the group. The one that
  // pays is the youngest job (by its oldest process's start) holding at least `meaningful_bytes`, whichever build
  // runs it; that build kills it at its next check. After kMaxDeferMs of one stall this build stops deferring and
  // kills its own (the other build may be stopped, or never check again). Always false alone in the group.
  bool AnotherBuildShouldPay(uint64_t meaningful_bytes, int64_t now_ms);
  static constexpr int64_t kMaxDeferMs = 2000;
  // This build capped (or raised the cap of) the group; false: it joined a cap another build had set.
  bool capped_group() const { return capped_group_; }

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
  bool GroupIsCapped();
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
  bool capped_group_ = false;
  int64_t stalled_since_ms_ = -1;  // when the current stall was first seen; -1 while not stalled
  CgroupDirLock group_lock_;  // flock on group_dir: arming, leaving and kills among the builds sharing it
  pid_t watcher_pid_ = -1;
  int watcher_keepalive_fd_ = -1;  // its other end is the watcher's; EOF without a verdict means undo
};

}  // namespace headroom
