// The machine-wide build ledger: one small file per running headroom build in a shared directory, saying what
// its running jobs are still expected to grow by, so that several builds on one machine do not each count the
// whole memory budget as their own (docs/build-ledger.md).
#pragma once

#include <dirent.h>
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace headroom {

// One build's entry. Nothing in it is secret: entries are readable by every user of the machine.
struct LedgerEntry {
  std::string id;            // this build's id: "<pid>-<process start time in clock ticks from /proc/self/stat>", unique across pid reuse
  pid_t pid = 0;
  uint32_t uid = 0;          // filled by the reader from the entry file's owner (not trusted from the text)
  std::string cgroup;        // the build's own memory cgroup path as /proc/self/cgroup shows it, e.g. "/box/sub" ("" unknown)
  std::string parent_id;     // when this build runs as a job of another headroom: the outer build's id, else ""
  int64_t parent_job = -1;   // and the outer build's job key
  uint64_t owed_bytes = 0;   // what its running jobs are still expected to grow by
  uint64_t used_bytes = 0;   // what its running jobs hold now (informational, for -t memstats/--report)
  uint64_t budget_bytes = 0; // its budget (informational)
  // What its next job needs while it waits for memory that other builds hold (nothing of its own runs, or the job
  // must run alone after memory failures): the other builds leave that much free for it (0: none waits so).
  uint64_t waiting_bytes = 0;
  int64_t updated_ms = 0;    // CLOCK_MONOTONIC ms of the last publish (system-wide clock)
};

// The longest PublishCoalesced holds back a change of owed or used alone.
inline constexpr int64_t kLedgerCoalesceMs = 50;
// The most one entry may claim for any byte figure (1 PiB); larger figures read back as this. A hostile entry
// can therefore make other builds' admission see no room, never fail them: admission's forward-progress rule
// still starts a job whenever none of a build's own runs.
inline constexpr uint64_t kMaxLedgerClaimBytes = uint64_t{1} << 50;
// A figure as the ledger publishes and reads it: at most kMaxLedgerClaimBytes.
inline uint64_t ClampLedgerClaim(uint64_t bytes) { return bytes < kMaxLedgerClaimBytes ? bytes : kMaxLedgerClaimBytes; }
// Others() reads no more than this many entries of one user (the file's owner) per call, so one user flooding
// the directory can neither hide other users' builds nor make a reading costly...
inline constexpr size_t kMaxLedgerEntriesPerUser = 64;
// ...and looks at no more than this many names in all (a bound on its cost, not reached by honest use).
inline constexpr size_t kMaxLedgerEntries = 4096;
// The most an entry's record may take (the reader reads no further); a longer cgroup path is published as "".
inline constexpr size_t kMaxLedgerRecordBytes = 4096;

// One build's entry and its view of the others. Used from one thread. A forked child must neither destroy it (the
// destructor removes the entry) nor keep running without exec while the build may die: it shares the entry's lock
// (docs/build-ledger.md, "After a crash").
class BuildLedger {
 public:
  // Opens (creating if needed) the ledger directory and this build's entry. nullptr with *err when the
  // directory is unsafe or cannot be used; callers then go on without a ledger (say so in -d explain).
  // self.id "" means ThisBuildId(), self.pid 0 means getpid(); self.uid is ignored (the file's owner counts).
  // id, pid, cgroup, parent_id and parent_job are fixed for the entry's life; Publish updates the figures.
  static std::unique_ptr<BuildLedger> Open(const std::string& dir, const LedgerEntry& self, std::string* err);
  ~BuildLedger();                       // removes this build's entry
  BuildLedger(const BuildLedger&) = delete;
  BuildLedger& operator=(const BuildLedger&) = delete;

  // Rewrites this build's entry (owed/used/budget/updated). Cheap: one pwrite, skipped when nothing changed
  // (owed, used and budget as last written; updated_ms alone is no change). self.updated_ms 0 means now.
  // Figures above kMaxLedgerClaimBytes are published as that. False when the write failed.
  bool Publish(const LedgerEntry& self);
  // Publish for figures that change with every job start and end: a change of owed or used alone is written at most
  // once per kLedgerCoalesceMs (readers re-read no more often than every 100 ms anyway), and otherwise left to a
  // later call, which the caller makes at least every sampling interval while its jobs run. Written at once: a
  // change of budget or waiting, and owed going to or from zero (a build's first job, its last one's end).
  // now_ms 0 means now (CLOCK_MONOTONIC ms). True when nothing failed (a held change is no failure).
  bool PublishCoalesced(const LedgerEntry& self, int64_t now_ms = 0);
  // The live entries of every *other* build. Entries of dead builds are never returned (and removed when
  // this user may remove them). Malformed entries are skipped, values clamped to sane bounds.
  std::vector<LedgerEntry> Others();
  const std::string& id() const { return self_.id; }
  // The directory and this build's entry file, for -d explain.
  const std::string& dir() const { return dir_; }
  std::string entry_path() const { return dir_ + "/" + entry_name_; }

 private:
  BuildLedger() = default;

  std::string dir_;
  int dir_fd_ = -1;          // every later operation is relative to it, so a renamed path cannot redirect us
  DIR* dir_stream_ = nullptr;  // over a duplicate of dir_fd_, rewound for each Others()
  std::string entry_name_;
  int entry_fd_ = -1;        // held with an exclusive flock for the entry's whole life (O_CLOEXEC)
  LedgerEntry self_;         // what was last written
  int64_t written_ms_ = 0;   // when it was written (CLOCK_MONOTONIC ms)
  size_t record_bytes_ = 0;  // length of the longest record written: shorter ones are padded to it
  std::map<std::string, LedgerEntry> last_good_;  // by file name: each live entry's last whole reading
};

std::string DefaultLedgerDir();          // $HEADROOM_LEDGER_DIR, else /dev/shm/headroom-ledger (else /tmp/headroom-ledger where /dev/shm is missing)
std::string ThisBuildId();               // the id format above, for this process

// The entry file's one line, exposed for tests and the fuzz target:
//   headroom-ledger 1 id=<id> pid=<n> cgroup=<path> parent_id=<id> parent_job=<n> owed=<n> used=<n>
//   budget=<n> updated_ms=<n> sum=<16 hex digits>
// Strings are percent-encoded (no spaces, '=' or control bytes in a value). `sum` is FNV-1a 64 over every byte
// before " sum=": a record read while it was being rewritten fails it and is read again. Versions only add keys,
// so a reader takes any version >= 1 and ignores keys it does not know.
std::string FormatLedgerRecord(const LedgerEntry& entry);   // without the trailing padding and newline
// Parses the first line of `text`. False with *err for a malformed record (bad checksum, a missing or negative
// required figure, bad pid, duplicate key); byte figures above kMaxLedgerClaimBytes are clamped, not refused.
// entry->uid is left alone.
bool ParseLedgerRecord(std::string_view text, LedgerEntry* entry, std::string* err);
uint64_t LedgerRecordChecksum(std::string_view body);        // FNV-1a 64, as `sum` holds it

}  // namespace headroom
