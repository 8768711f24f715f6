// BuildGuard: caps the group the builds of a cgroup share (v1 limit + OOM killer off + eventfd, v2 memory.high/max),
// tells when they are stalled at its limit, one kill at a time among them, and undoes this build's part (the cap
// with the last build out) on release or, via a watcher, on death.
#include "headroom/memory/build_guard.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "headroom/exec/spawn_resident.h"
#include "headroom/memory/memory_parsers.h"
#include "headroom/util/byte_size.h"

namespace headroom {

namespace {

constexpr uint64_t kMinHighGapBytes = 32ull << 20;
constexpr char kReleasedVerdict = 'r';  // headroom undid the guard itself: the watcher has nothing to do
// Arming and leaving hold the shared group's lock for a few file writes; a kill turn holds it until a victim has
// ended (normally well under a second). Past this wait a build goes on without it rather than stall.
constexpr int kLockWaitMs = 2000;
// v1 reads an unlimited memory.limit_in_bytes as a page-rounded 2^63 - 1; anything this large is no cap.
constexpr uint64_t kV1Unlimited = uint64_t{1} << 62;

void ContinueTasks(const std::string& dir) {
  std::string text, err;
  if (!ReadWholeFile(dir + "/cgroup.procs", &text, &err)) return;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (auto pid = ParseSingleNumber(std::string_view(text).substr(start, end - start))) {
      kill(static_cast<pid_t>(*pid), SIGCONT);
    }
    start = end + 1;
  }
}

// When a job began: the start (clock ticks since boot, /proc/<pid>/stat field 22) of the oldest process in its
// group or below it, comparable across builds. nullopt when it holds none. A spawn resident, which lives in a
// recycled group across its jobs, is no part of one.
std::optional<uint64_t> JobStartTicks(const std::string& job_dir) {
  static const std::string resident_name = fmt::format("({})", SpawnResident::kProcessName);
  std::optional<uint64_t> oldest;
  for (pid_t pid : CgroupTreePids(job_dir)) {
    std::string stat, err;
    if (!ReadWholeFile(fmt::format("/proc/{}/stat", pid), &stat, &err)) continue;
    size_t field = stat.rfind(')');  // the command name may hold spaces and parentheses
    if (field == std::string::npos) continue;
    if (const size_t name = stat.find(" ("); name != std::string::npos &&
        stat.compare(name + 1, field + 1 - (name + 1), resident_name) == 0) {
      continue;
    }
    // Fields after the name start at 3 (state); the start time is field 22.
    for (int n = 2; n < 22 && field != std::string::npos; ++n) field = stat.find(' ', field + 1);
    if (field == std::string::npos) continue;
    std::optional<uint64_t> start = ParseSingleNumber(std::string_view(stat).substr(field + 1, stat.find(' ', field + 1) - field - 1));
    if (start && (!oldest || *start < *oldest)) oldest = start;
  }
  return oldest;
}

bool HasTasks(const std::string& dir) {
  std::string text, err;
  if (!ReadWholeFile(dir + "/cgroup.procs", &text, &err)) return false;
  return text.find_first_not_of(" \n") != std::string::npos;
}

// After headroom's death its jobs run on as orphans (as under ninja). In a shared group other builds still
// hold the cap, which nobody would resolve for the orphans, so they move out at once (into the own cgroup, v1,
// or its leaf, v2; their memory already charged stays counted where it was until they free it) and this build's
// groups go; then the last build out removes the shared group. Alone, they run on in the uncapped group, and
// its groups go once the last has ended.
void RemoveGroupsWhenEmpty(const GuardUndoPlan& plan) {
  if (!plan.build_dir.empty() && !plan.evacuate_dir.empty()) {
    std::string ignored;
    if (plan.version == CgroupVersion::kV2) mkdir(plan.evacuate_dir.c_str(), 0755);
    if (!plan.v1_freezer_group_dir.empty() && !plan.v1_freezer_evacuate_dir.empty()) {
      MoveCgroupTreeProcesses(plan.v1_freezer_group_dir, plan.v1_freezer_evacuate_dir, &ignored);
      RemoveCgroupTree(plan.v1_freezer_group_dir);
    }
    MoveCgroupTreeProcesses(plan.build_dir, plan.evacuate_dir, &ignored);
    RemoveCgroupTree(plan.build_dir);
    rmdir(plan.group_dir.c_str());  // fails while other builds are inside: they are not done
    if (plan.version == CgroupVersion::kV2) {
      // The orphans now live in the leaf; once they have ended, the leaf goes too when nothing else needs it.
      const std::string home = plan.evacuate_dir.substr(0, plan.evacuate_dir.rfind('/'));
      auto others_in_leaf = [&] {
        const std::vector<pid_t> pids = CgroupPids(plan.evacuate_dir);
        return std::any_of(pids.begin(), pids.end(), [](pid_t pid) { return pid != getpid(); });
      };
      while (others_in_leaf() && CgroupChildren(home) == std::vector<std::string>{plan.evacuate_dir}) usleep(500'000);
      UndoUnusedLeafV2(home);
    }
    return;
  }
  const std::string& build = plan.build_dir.empty() ? plan.group_dir : plan.build_dir;
  for (;;) {
    bool busy = false;
    for (const std::string& job : CgroupChildren(build)) busy = busy || HasTasks(job);
    if (!busy) break;
    usleep(500'000);
  }
  for (const std::string& group : {plan.v1_freezer_group_dir, build}) {
    if (group.empty()) continue;
    for (const std::string& job : CgroupChildren(group)) rmdir(job.c_str());
    rmdir(group.c_str());
  }
  if (!plan.build_dir.empty()) rmdir(plan.group_dir.c_str());
}

// The watcher: a child that outlives headroom, blocked on a pipe whose only writer is headroom. Any end
// of headroom (exit, a signal, SIGKILL) closes the pipe; unless headroom first said it undid the guard
// itself, the watcher undoes it, so no task stays paused at the limit or frozen. It leaves the terminal's
// process group and ignores the interrupt signals, or a Ctrl-C would end it together with headroom.
// Closing its descriptors (the write end of the ready pipe among them) tells headroom it is set up.
[[noreturn]] void RunWatcher(int keepalive_fd, const GuardUndoPlan& plan) {
  setpgid(0, 0);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU}) signal(sig, SIG_IGN);
  // Holding headroom's stdout or a job's pipe open would keep its readers waiting for EOF. One close_range
  // call each side of the keep-alive descriptor (Linux 5.9), else a loop.
  const unsigned keep = static_cast<unsigned>(keepalive_fd);
  bool closed = (keep == 0 || syscall(SYS_close_range, 0u, keep - 1, 0u) == 0) &&
                syscall(SYS_close_range, keep + 1, ~0u, 0u) == 0;
  if (!closed) {
    long max_fd = sysconf(_SC_OPEN_MAX);
    if (max_fd < 0 || max_fd > 65536) max_fd = 65536;
    for (int fd = 0; fd < max_fd; ++fd) {
      if (fd != keepalive_fd) close(fd);
    }
  }
  char verdict = 0;
  ssize_t n;
  do {
    n = read(keepalive_fd, &verdict, 1);
  } while (n < 0 && errno == EINTR);
  if (!(n == 1 && verdict == kReleasedVerdict)) {
    UndoGuard(plan);
    RemoveGroupsWhenEmpty(plan);
  }
  _exit(0);
}

}  // namespace

bool LastBuildInGroup(const GuardUndoPlan& plan) {
  if (plan.build_dir.empty()) return true;
  SweepStaleBuildGroups(plan.group_dir);
  for (const std::string& child : CgroupChildren(plan.group_dir)) {
    if (child != plan.build_dir) return false;
  }
  return true;
}

void UndoGuard(const GuardUndoPlan& plan) {
  if (plan.group_dir.empty()) return;
  const std::string& build = plan.build_dir.empty() ? plan.group_dir : plan.build_dir;
  std::string ignored;
  // Under the group's lock, so that a build arming meanwhile either is seen here (and the cap stays for it) or
  // arms after the cap is lifted (and caps the group again).
  CgroupDirLock lock(plan.group_dir);
  lock.Lock(kLockWaitMs);
  // Lifting the limit wakes tasks waiting at it; v1 also gets its OOM killer back (that write wakes the
  // waiters too), so from here on the group behaves as it would without headroom.
  const bool last = LastBuildInGroup(plan);
  if (plan.version == CgroupVersion::kV1) {
    if (last) {
      WriteWholeFile(plan.group_dir + "/memory.limit_in_bytes", "-1", &ignored);
      WriteWholeFile(plan.group_dir + "/memory.oom_control", "0", &ignored);
    }
    if (!plan.v1_freezer_group_dir.empty()) {
      for (const std::string& job : CgroupChildren(plan.v1_freezer_group_dir)) {
        WriteWholeFile(job + "/freezer.state", "THAWED", &ignored);
      }
    }
  } else if (plan.version == CgroupVersion::kV2) {
    if (last) {
      WriteWholeFile(plan.group_dir + "/memory.high", "max", &ignored);
      WriteWholeFile(plan.group_dir + "/memory.max", "max", &ignored);
    }
    for (const std::string& job : CgroupChildren(build)) {
      WriteWholeFile(job + "/cgroup.freeze", "0", &ignored);
    }
  }
  // Jobs stopped with SIGSTOP (no freezer here) resume too.
  for (const std::string& job : CgroupChildren(build)) ContinueTasks(job);
}

std::unique_ptr<BuildGuard> BuildGuard::Arm(const BuildGuardOptions& options, std::string* err) {
  if (options.version == CgroupVersion::kNone || options.group_dir.empty()) {
    *err = "no per-build cgroup";
    return nullptr;
  }
  if (options.limit_bytes == 0) {
    *err = "no memory budget to cap the build at";
    return nullptr;
  }
  std::unique_ptr<BuildGuard> guard(new BuildGuard(options));
  // The watcher comes first: from the first write on, a death of headroom must be undone.
  if (options.start_watcher && !guard->StartWatcher(err)) return nullptr;
  // Whether the group is capped already and capping it are one step among the builds that share it.
  guard->group_lock_ = CgroupDirLock(options.group_dir);
  guard->group_lock_.Lock(kLockWaitMs);
  bool ok = options.version == CgroupVersion::kV1 ? guard->ArmV1(err) : guard->ArmV2(err);
  guard->group_lock_.Unlock();
  if (!ok) {
    UndoGuard(guard->UndoPlan());
    guard->DismissWatcher(kReleasedVerdict);
    return nullptr;
  }
  guard->armed_ = true;
  return guard;
}

BuildGuard::~BuildGuard() {
  Release();
  if (oom_eventfd_ >= 0) close(oom_eventfd_);
  if (oom_control_fd_ >= 0) close(oom_control_fd_);
}

// v1: the limit on the group, the group's OOM killer off (the over-limit group's flag is what counts, so
// the job cgroups below it pause as well), and an eventfd the kernel signals when tasks start waiting.
bool BuildGuard::ArmV1(std::string* err) {
  const std::string& dir = options_.group_dir;
  capped_group_ = !GroupIsCapped();
  if (capped_group_ &&
      !WriteWholeFile(dir + "/memory.limit_in_bytes", std::to_string(options_.limit_bytes), err)) {
    return false;
  }
  if (!WriteWholeFile(dir + "/memory.oom_control", "1", err)) return false;
  oom_control_ = KernelFile(dir + "/memory.oom_control");
  failcnt_ = KernelFile(dir + "/memory.failcnt");
  ReadLimitHits();  // a job started before the first tick compares with this
  // The notification only wakes a check sooner; under_oom is read every tick regardless, so failing to
  // register (a fake tree, an old kernel) costs nothing but that.
  oom_eventfd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  oom_control_fd_ = open((dir + "/memory.oom_control").c_str(), O_RDONLY | O_CLOEXEC);
  if (oom_eventfd_ >= 0 && oom_control_fd_ >= 0) {
    std::string ignored;
    WriteWholeFile(dir + "/cgroup.event_control", fmt::format("{} {}", oom_eventfd_, oom_control_fd_), &ignored);
  }
  return true;
}

// v2 has no switch for the OOM killer: memory.high below memory.max makes the kernel reclaim and throttle
// the build's tasks first, and headroom frees memory while they are throttled.
bool BuildGuard::ArmV2(std::string* err) {
  const std::string& dir = options_.group_dir;
  // The kernel's throttle grows with the square of how far a group is above memory.high, so a gap of an
  // eighth lets it slow the build to a crawl well before memory.max, where the kernel would kill.
  uint64_t gap = options_.v2_high_gap_bytes ? options_.v2_high_gap_bytes
                                            : std::max(kMinHighGapBytes, options_.limit_bytes / 8);
  high_bytes_ = options_.limit_bytes > 2 * gap ? options_.limit_bytes - gap : options_.limit_bytes / 2;
  capped_group_ = !GroupIsCapped();
  if (capped_group_ && (!WriteWholeFile(dir + "/memory.max", std::to_string(options_.limit_bytes), err) ||
                        !WriteWholeFile(dir + "/memory.high", std::to_string(high_bytes_), err))) {
    return false;
  }
  events_ = KernelFile(dir + "/memory.events");
  current_ = KernelFile(dir + "/memory.current");
  pressure_ = KernelFile(dir + "/memory.pressure");
  // Counters start where they are: only what happens under the guard counts.
  std::string text, ignored;
  if (events_.Read(&text, &ignored)) {
    last_high_ = ParseKeyedValue(text, "high").value_or(0);
    last_max_ = ParseKeyedValue(text, "max").value_or(0);
    last_oom_ = ParseKeyedValue(text, "oom").value_or(0);
    last_oom_kill_ = ParseKeyedValue(text, "oom_kill").value_or(0);
    limit_hits_ = last_max_;
  }
  return true;
}

// A build alone in its group (no shared group) always caps it. In a shared group the first arming build caps it; a
// later one keeps that cap, or raises it to its own limit when that is higher (a first build's small --mem-budget
// must not bind a later build's larger one). Every build's limit is at most what was available when it began less
// the margin, so the larger of two is still below the enclosing limit. The cap kept becomes this build's figures.
bool BuildGuard::GroupIsCapped() {
  if (options_.build_dir.empty()) return false;
  std::string text, err;
  const bool v1 = options_.version == CgroupVersion::kV1;
  if (!ReadWholeFile(options_.group_dir + (v1 ? "/memory.limit_in_bytes" : "/memory.max"), &text, &err)) return false;
  std::optional<uint64_t> limit = ParseSingleNumber(text);  // v2 "max" parses as none
  if (!limit || (v1 && *limit >= kV1Unlimited)) return false;
  if (*limit < options_.limit_bytes) return false;  // raised to this build's limit
  options_.limit_bytes = *limit;
  if (!v1 && ReadWholeFile(options_.group_dir + "/memory.high", &text, &err)) {
    if (std::optional<uint64_t> high = ParseSingleNumber(text)) high_bytes_ = std::min(*high, *limit);
  }
  return true;
}

bool BuildGuard::TakeKillTurn() {
  if (options_.build_dir.empty()) return true;  // alone: the controller's own one-kill-at-a-time rule suffices
  return group_lock_.TryLock();
}

void BuildGuard::EndKillTurn() { group_lock_.Unlock(); }

bool BuildGuard::StartWatcher(std::string* err) {
  int fds[2], ready[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    *err = fmt::format("pipe for the guard's watcher: {}", strerror(errno));
    return false;
  }
  if (pipe2(ready, O_CLOEXEC) != 0) {
    *err = fmt::format("pipe for the guard's watcher: {}", strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return false;
  }
  const GuardUndoPlan plan = UndoPlan();
  fflush(nullptr);  // nothing buffered may be written twice
  pid_t pid = fork();
  if (pid < 0) {
    *err = fmt::format("cannot start the guard's watcher: {}", strerror(errno));
    for (int fd : {fds[0], fds[1], ready[0], ready[1]}) close(fd);
    return false;
  }
  if (pid == 0) {
    close(fds[1]);
    RunWatcher(fds[0], plan);
  }
  close(fds[0]);
  close(ready[1]);
  // Until the watcher has left the terminal's process group and ignores interrupts, a Ctrl-C would end it.
  char byte;
  while (read(ready[0], &byte, 1) < 0 && errno == EINTR) {
  }
  close(ready[0]);
  watcher_pid_ = pid;
  watcher_keepalive_fd_ = fds[1];
  return true;
}

void BuildGuard::DismissWatcher(char verdict) {
  if (watcher_keepalive_fd_ >= 0) {
    if (verdict != 0) {
      ssize_t ignored = write(watcher_keepalive_fd_, &verdict, 1);
      (void)ignored;
    }
    close(watcher_keepalive_fd_);
    watcher_keepalive_fd_ = -1;
  }
  if (watcher_pid_ > 0) {
    int status;
    while (waitpid(watcher_pid_, &status, 0) < 0 && errno == EINTR) {
    }
    watcher_pid_ = -1;
  }
}

void BuildGuard::Release() {
  EndKillTurn();  // UndoGuard takes the group's lock through its own descriptor
  if (armed_) UndoGuard(UndoPlan());
  armed_ = false;
  DismissWatcher(kReleasedVerdict);
}

void BuildGuard::AbandonWatcherForTest() { DismissWatcher(0); }

GuardUndoPlan BuildGuard::UndoPlan() const {
  return GuardUndoPlan{options_.version,      options_.group_dir,    options_.build_dir,
                       options_.v1_freezer_group_dir, options_.evacuate_dir, options_.v1_freezer_evacuate_dir};
}

GuardCheck BuildGuard::Check(int64_t now_ms) {
  if (!armed_) return {};
  GuardCheck check = options_.version == CgroupVersion::kV1 ? CheckV1() : CheckV2(now_ms);
  if (!check.stalled) {
    stalled_since_ms_ = -1;
  } else if (stalled_since_ms_ < 0) {
    stalled_since_ms_ = now_ms;
  }
  return check;
}

bool BuildGuard::AnotherBuildShouldPay(uint64_t meaningful_bytes, int64_t now_ms) {
  if (options_.build_dir.empty()) return false;
  if (stalled_since_ms_ >= 0 && now_ms - stalled_since_ms_ >= kMaxDeferMs) return false;
  const std::string usage_file = options_.version == CgroupVersion::kV1 ? "/memory.usage_in_bytes" : "/memory.current";
  std::string youngest_owner;
  uint64_t youngest_start = 0;
  for (const std::string& build : CgroupChildren(options_.group_dir)) {
    for (const std::string& job : CgroupChildren(build)) {
      std::string text, err;
      if (!ReadWholeFile(job + usage_file, &text, &err) || ParseSingleNumber(text).value_or(0) < meaningful_bytes) {
        continue;
      }
      std::optional<uint64_t> started = JobStartTicks(job);
      if (started && (youngest_owner.empty() || *started > youngest_start)) {
        youngest_start = *started;
        youngest_owner = build;
      }
    }
  }
  return !youngest_owner.empty() && youngest_owner != options_.build_dir;
}

uint64_t BuildGuard::ReadLimitHits() {
  std::string text, err;
  if (options_.version == CgroupVersion::kV1) {
    if (failcnt_.Read(&text, &err)) NoteLimitHits(ParseSingleNumber(text));
  } else if (events_.Read(&text, &err)) {
    NoteLimitHits(ParseKeyedValue(text, "max"));
  }
  return limit_hits_;
}

void BuildGuard::NoteLimitHits(std::optional<uint64_t> hits) {
  if (hits) limit_hits_ = std::max(limit_hits_, *hits);
}

GuardCheck BuildGuard::CheckV1() {
  GuardCheck check;
  ReadLimitHits();
  if (oom_eventfd_ >= 0) {
    uint64_t events;
    ssize_t ignored = read(oom_eventfd_, &events, sizeof events);  // drained; under_oom below decides
    (void)ignored;
  }
  std::string text, err;
  if (!oom_control_.Read(&text, &err)) return check;
  if (ParseKeyedValue(text, "under_oom").value_or(0) != 0) {
    check.stalled = true;
    check.detail = fmt::format("the build's tasks wait at its {} limit", FormatBytes(options_.limit_bytes));
  }
  return check;
}

// Stalled: the group hit memory.max (its OOM killer may act next), or it is above memory.high, was throttled
// since the last check, and its tasks spent a real share of that time stalled (PSI "some").
GuardCheck BuildGuard::CheckV2(int64_t now_ms) {
  GuardCheck check;
  std::string text, err;
  if (!events_.Read(&text, &err)) return check;
  const uint64_t high = ParseKeyedValue(text, "high").value_or(last_high_);
  const uint64_t max = ParseKeyedValue(text, "max").value_or(last_max_);
  const uint64_t oom = ParseKeyedValue(text, "oom").value_or(last_oom_);
  const uint64_t oom_kill = ParseKeyedValue(text, "oom_kill").value_or(last_oom_kill_);
  check.kernel_oom_kills = oom_kill > last_oom_kill_ ? oom_kill - last_oom_kill_ : 0;
  const bool hit_max = max > last_max_ || oom > last_oom_;
  const bool throttled = high > last_high_;
  last_high_ = high;
  last_max_ = max;
  last_oom_ = oom;
  last_oom_kill_ = oom_kill;
  NoteLimitHits(max);

  uint64_t current = 0;
  if (current_.Read(&text, &err)) current = ParseSingleNumber(text).value_or(0);
  std::optional<double> pressure_pct;
  if (pressure_.Read(&text, &err)) {
    if (std::optional<PsiSnapshot> psi = ParsePsi(text)) {
      if (last_pressure_total_us_ && last_check_ms_ >= 0 && now_ms > last_check_ms_ &&
          psi->some.total_us >= *last_pressure_total_us_) {
        double stalled_us = static_cast<double>(psi->some.total_us - *last_pressure_total_us_);
        pressure_pct = stalled_us / 10.0 / static_cast<double>(now_ms - last_check_ms_);
      } else {
        pressure_pct = psi->some.avg10;
      }
      last_pressure_total_us_ = psi->some.total_us;
    }
  }
  last_check_ms_ = now_ms;

  const bool pressed = !pressure_pct || *pressure_pct >= options_.v2_stall_pressure_pct;
  if (hit_max) {
    check.stalled = true;
    check.detail = fmt::format("the build reached its {} memory.max", FormatBytes(options_.limit_bytes));
  } else if (throttled && current >= high_bytes_ && pressed) {
    check.stalled = true;
    check.detail = fmt::format("the build is throttled above its {} memory.high ({} in use{})",
                               FormatBytes(high_bytes_), FormatBytes(current),
                               pressure_pct ? fmt::format(", {:.0f}% stalled", *pressure_pct) : "");
  }
  return check;
}

std::string BuildGuard::Describe() const {
  if (options_.version == CgroupVersion::kV1) {
    return fmt::format("build guard: cgroup v1, jobs capped at {} with the kernel's OOM killer off for them; "
                       "headroom chooses who is killed and requeued",
                       FormatBytes(options_.limit_bytes));
  }
  return fmt::format("build guard: cgroup v2, jobs throttled above {} (memory.high) and capped at {} "
                     "(memory.max); headroom kills and requeues before the kernel would",
                     FormatBytes(high_bytes_), FormatBytes(options_.limit_bytes));
}

}  // namespace headroom
