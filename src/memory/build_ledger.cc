// The build ledger: the shared directory's safety checks, this build's entry file (created locked, linked into
// place, rewritten in one pwrite) and the reading of other builds' entries (a lock probe for liveness, a checksum
// against torn reads; the record's text is ledger_record.cc's). The why of each choice is in docs/build-ledger.md.
#include "headroom/memory/build_ledger.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

#include <fmt/format.h>

#include "headroom/memory/kernel_file.h"

namespace headroom {
namespace {

constexpr std::string_view kEntrySuffix = ".ledger";
constexpr std::string_view kTempSuffix = ".tmp";
constexpr int kMaxNameAttempts = 8;         // names tried when one is taken (see CreateEntry)
constexpr int kMaxReadAttempts = 4;         // reads of one entry before it counts as torn this time
constexpr int64_t kStaleTempSeconds = 60;   // a temporary entry this old and unlocked was left by a crash
constexpr size_t kMaxIdLength = 100;

int64_t MonotonicMs() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

std::string ErrnoText() { return std::strerror(errno); }

// Closes a descriptor on every way out of a function.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

bool IsEntryName(std::string_view name) {
  return !name.empty() && name[0] != '.' && EndsWith(name, kEntrySuffix);
}

bool IsTempName(std::string_view name) { return !name.empty() && name[0] == '.' && EndsWith(name, kTempSuffix); }

// Ids become file names, so only a plain, short name is accepted.
bool IsSafeId(std::string_view id) {
  if (id.empty() || id.size() > kMaxIdLength || id[0] == '.') return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_' ||
           c == '.';
  });
}

// The four figures an entry claims, as the ledger publishes them (each at most kMaxLedgerClaimBytes).
void CopyClampedClaims(const LedgerEntry& from, LedgerEntry* to) {
  to->owed_bytes = ClampLedgerClaim(from.owed_bytes);
  to->used_bytes = ClampLedgerClaim(from.used_bytes);
  to->budget_bytes = ClampLedgerClaim(from.budget_bytes);
  to->waiting_bytes = ClampLedgerClaim(from.waiting_bytes);
}

// ---- the directory ----

// Refuses a directory another user could use to remove or replace our entries, or that someone other than root
// or us controls.
bool CheckDirectorySafe(const std::string& dir, const struct stat& st, std::string* err) {
  const uid_t me = geteuid();
  if (st.st_uid != 0 && st.st_uid != me) {
    *err = fmt::format("ledger directory {} is owned by uid {}, neither root nor you (uid {}); not using it", dir,
                       st.st_uid, me);
    return false;
  }
  const bool sticky = (st.st_mode & S_ISVTX) != 0;
  if ((st.st_mode & S_IWOTH) && !sticky) {
    *err = fmt::format("ledger directory {} is world-writable without the sticky bit (mode {:o}): anyone could "
                       "remove or replace other builds' entries; not using it",
                       dir, st.st_mode & 07777);
    return false;
  }
  if ((st.st_mode & S_IWGRP) && !sticky) {
    *err = fmt::format("ledger directory {} is group-writable without the sticky bit (mode {:o}): the group could "
                       "remove or replace other builds' entries; not using it",
                       dir, st.st_mode & 07777);
    return false;
  }
  return true;
}

// Opens `dir`, creating it shared like /tmp (mode 1777, set explicitly: the umask would strip it) when it is
// missing, and checks it is safe. Returns its descriptor, or -1 with *err.
int OpenLedgerDirectory(const std::string& dir, std::string* err) {
  if (dir.empty()) {
    *err = "no ledger directory";
    return -1;
  }
  const bool created = mkdir(dir.c_str(), 01777) == 0;
  if (!created && errno != EEXIST) {
    *err = fmt::format("cannot create the ledger directory {}: {}", dir, ErrnoText());
    return -1;
  }
  struct stat link_st {};
  if (lstat(dir.c_str(), &link_st) != 0) {
    *err = fmt::format("cannot stat the ledger directory {}: {}", dir, ErrnoText());
    return -1;
  }
  if (S_ISLNK(link_st.st_mode)) {
    *err = fmt::format("ledger directory {} is a symlink (whoever owns it could point it anywhere); not using it",
                       dir);
    return -1;
  }
  if (!S_ISDIR(link_st.st_mode)) {
    *err = fmt::format("ledger directory {} is not a directory; not using it", dir);
    return -1;
  }
  FdCloser closer(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  const int dir_fd = closer.get();
  struct stat st {};
  if (dir_fd < 0 || fstat(dir_fd, &st) != 0) {
    *err = fmt::format("cannot open the ledger directory {}: {}", dir, ErrnoText());
    return -1;
  }
  if (st.st_dev != link_st.st_dev || st.st_ino != link_st.st_ino) {
    *err = fmt::format("ledger directory {} was replaced while it was opened; not using it", dir);
    return -1;
  }
  if (created && st.st_uid == geteuid() && (st.st_mode & 07777) != 01777) {
    if (fchmod(dir_fd, 01777) != 0 || fstat(dir_fd, &st) != 0) {
      *err = fmt::format("cannot make the ledger directory {} shared (mode 1777): {}", dir, ErrnoText());
      return -1;
    }
  }
  if (!CheckDirectorySafe(dir, st, err)) return -1;
  return closer.release();
}

// Removes `name` if it is still the file `st` describes (a reader holds it open and found it unlocked). May fail
// quietly: in a sticky directory only the owner (or root) may remove another user's file.
void RemoveIfSameFile(int dir_fd, const char* name, const struct stat& st) {
  struct stat now {};
  if (fstatat(dir_fd, name, &now, AT_SYMLINK_NOFOLLOW) != 0) return;
  if (now.st_dev != st.st_dev || now.st_ino != st.st_ino) return;
  unlinkat(dir_fd, name, 0);
}

// A temporary entry left by a build killed between creating and linking it (it is locked from a moment after its
// creation, so one that is old and unlocked is dead).
void RemoveStaleTemporaries(int dir_fd) {
  const int list_fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
  if (list_fd < 0) return;
  DIR* listing = fdopendir(list_fd);
  if (listing == nullptr) {
    close(list_fd);
    return;
  }
  const time_t now = time(nullptr);
  while (const dirent* item = readdir(listing)) {
    if (!IsTempName(item->d_name)) continue;
    FdCloser closer(openat(dir_fd, item->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    const int raw = closer.get();
    struct stat st {};
    if (raw < 0 || fstat(raw, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (now - st.st_mtime < kStaleTempSeconds) continue;
    if (flock(raw, LOCK_SH | LOCK_NB) == 0) RemoveIfSameFile(dir_fd, item->d_name, st);
  }
  closedir(listing);
}

// ---- this build's entry ----

// The record as written: the line, padded with spaces to at least `min_bytes` - 1, and a newline. Padding keeps
// the file's length from ever shrinking, so a shorter record needs no truncate (a second system call).
std::string PaddedRecord(const LedgerEntry& entry, size_t min_bytes) {
  std::string record = FormatLedgerRecord(entry);
  if (record.size() + 1 < min_bytes) record.append(min_bytes - 1 - record.size(), ' ');
  record += '\n';
  return record;
}

bool WriteRecordAt0(int fd, const std::string& record) {
  ssize_t written;
  do {
    written = pwrite(fd, record.data(), record.size(), 0);
  } while (written < 0 && errno == EINTR);
  return written == static_cast<ssize_t>(record.size());
}

// Creates the entry under a temporary name, locks and fills it, then links it into place under the first free
// name of "<id>.ledger", "<id>-1.ledger", ...: a reader never finds a live build's entry unlocked or empty, and a
// file someone left under our name (another user's, in a sticky directory) cannot keep us out. Returns the
// locked descriptor with *name, or -1 with *err.
int CreateEntry(int dir_fd, const std::string& id, const std::string& record, std::string* name, std::string* err) {
  std::string temp;
  int fd = -1;
  for (int attempt = 0; attempt < kMaxNameAttempts && fd < 0; ++attempt) {
    temp = fmt::format(".{}-{}{}", id, attempt, kTempSuffix);
    fd = openat(dir_fd, temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    *err = fmt::format("cannot create a ledger entry: {}", ErrnoText());
    return -1;
  }
  FdCloser closer(fd);
  auto fail = [&](const char* what) {
    *err = fmt::format("cannot {} the ledger entry: {}", what, ErrnoText());
    unlinkat(dir_fd, temp.c_str(), 0);
    return -1;
  };
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) return fail("lock");
  if (fchmod(fd, 0644) != 0) return fail("chmod");  // readable by all whatever the umask: others must read it
  if (!WriteRecordAt0(fd, record)) return fail("write");
  bool placed = false;
  for (int attempt = 0; attempt < kMaxNameAttempts && !placed; ++attempt) {
    *name = attempt == 0 ? id + std::string(kEntrySuffix) : fmt::format("{}-{}{}", id, attempt, kEntrySuffix);
    if (linkat(dir_fd, temp.c_str(), dir_fd, name->c_str(), 0) == 0) {
      placed = true;
    } else if (errno == EPERM || errno == EOPNOTSUPP) {
      // A file system without hard links: rename, which replaces only a file of ours (the sticky bit).
      placed = renameat(dir_fd, temp.c_str(), dir_fd, name->c_str()) == 0;
      if (!placed) break;
    } else if (errno != EEXIST) {
      break;
    }
  }
  if (!placed) return fail("place");
  unlinkat(dir_fd, temp.c_str(), 0);
  return closer.release();
}

// ---- reading another build's entry ----

// Reads and parses a live entry, again when a read met a rewrite (torn: the checksum fails).
std::optional<LedgerEntry> ReadRecord(int fd, uid_t owner) {
  char buffer[kMaxLedgerRecordBytes];
  for (int attempt = 0; attempt < kMaxReadAttempts; ++attempt) {
    if (attempt > 0) sched_yield();  // let a writer that was preempted mid-copy finish
    const ssize_t n = pread(fd, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    LedgerEntry entry;
    entry.uid = owner;
    std::string err;
    if (ParseLedgerRecord(std::string_view(buffer, static_cast<size_t>(n)), &entry, &err)) return entry;
  }
  return std::nullopt;
}

}  // namespace

// ---- BuildLedger ----

std::unique_ptr<BuildLedger> BuildLedger::Open(const std::string& dir, const LedgerEntry& self, std::string* err) {
  LedgerEntry entry = self;
  if (entry.id.empty()) entry.id = ThisBuildId();
  if (entry.pid <= 0) entry.pid = getpid();
  entry.uid = static_cast<uint32_t>(geteuid());
  CopyClampedClaims(entry, &entry);
  if (entry.updated_ms <= 0) entry.updated_ms = MonotonicMs();
  if (!IsSafeId(entry.id)) {
    *err = fmt::format("build id '{}' cannot name a ledger entry", entry.id.substr(0, 200));
    return nullptr;
  }
  // A cgroup path too long for the record is published as unknown rather than cut, which would name another group.
  if (FormatLedgerRecord(entry).size() + 1 > kMaxLedgerRecordBytes) entry.cgroup.clear();
  if (FormatLedgerRecord(entry).size() + 1 > kMaxLedgerRecordBytes) {
    *err = "ledger entry too long (parent id?)";
    return nullptr;
  }

  const int dir_fd = OpenLedgerDirectory(dir, err);
  if (dir_fd < 0) return nullptr;
  std::unique_ptr<BuildLedger> ledger(new BuildLedger());
  ledger->dir_ = dir;
  ledger->dir_fd_ = dir_fd;
  const int list_fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);  // fdopendir takes it; ours stays for the *at calls
  ledger->dir_stream_ = list_fd >= 0 ? fdopendir(list_fd) : nullptr;
  if (ledger->dir_stream_ == nullptr) {
    *err = fmt::format("cannot list the ledger directory {}: {}", dir, ErrnoText());
    if (list_fd >= 0) close(list_fd);
    return nullptr;
  }
  RemoveStaleTemporaries(dir_fd);
  const std::string record = PaddedRecord(entry, 0);
  ledger->entry_fd_ = CreateEntry(dir_fd, entry.id, record, &ledger->entry_name_, err);
  if (ledger->entry_fd_ < 0) {
    *err = fmt::format("ledger directory {}: {}", dir, *err);
    return nullptr;
  }
  ledger->self_ = std::move(entry);
  ledger->record_bytes_ = record.size();
  ledger->written_ms_ = MonotonicMs();
  return ledger;
}

BuildLedger::~BuildLedger() {
  // Unlinked first, so no reader finds it unlocked while we go; a reader that already holds it open then finds it
  // unlocked, calls it dead and skips it, which it is.
  if (entry_fd_ >= 0) {
    unlinkat(dir_fd_, entry_name_.c_str(), 0);
    close(entry_fd_);
  }
  if (dir_stream_ != nullptr) closedir(dir_stream_);
  if (dir_fd_ >= 0) close(dir_fd_);
}

bool BuildLedger::Publish(const LedgerEntry& self) {
  LedgerEntry next = self_;
  CopyClampedClaims(self, &next);
  if (next.owed_bytes == self_.owed_bytes && next.used_bytes == self_.used_bytes &&
      next.budget_bytes == self_.budget_bytes && next.waiting_bytes == self_.waiting_bytes) {
    return true;
  }
  next.updated_ms = self.updated_ms > 0 ? self.updated_ms : MonotonicMs();
  const std::string record = PaddedRecord(next, record_bytes_);
  if (!WriteRecordAt0(entry_fd_, record)) return false;
  written_ms_ = MonotonicMs();
  self_ = std::move(next);
  record_bytes_ = record.size();
  return true;
}

bool BuildLedger::PublishCoalesced(const LedgerEntry& self, int64_t now_ms) {
  const uint64_t owed = ClampLedgerClaim(self.owed_bytes);
  const bool matters_now = ClampLedgerClaim(self.budget_bytes) != self_.budget_bytes ||
                           ClampLedgerClaim(self.waiting_bytes) != self_.waiting_bytes ||
                           (owed == 0) != (self_.owed_bytes == 0);
  if (!matters_now && (now_ms > 0 ? now_ms : MonotonicMs()) - written_ms_ < kLedgerCoalesceMs) return true;
  return Publish(self);
}

std::vector<LedgerEntry> BuildLedger::Others() {
  std::vector<LedgerEntry> others;
  std::map<std::string, LedgerEntry> readings;
  std::map<uid_t, size_t> read_per_user;
  rewinddir(dir_stream_);  // re-reads the directory
  size_t examined = 0;
  while (const dirent* item = readdir(dir_stream_)) {
    if (!IsEntryName(item->d_name) || item->d_name == entry_name_) continue;
    // Symlinks, FIFOs, directories: never ours, and skipped before an open that could block or follow them.
    if (item->d_type != DT_REG && item->d_type != DT_UNKNOWN) continue;
    if (++examined > kMaxLedgerEntries) break;
    FdCloser closer(openat(dir_fd_, item->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
    const int raw = closer.get();
    struct stat st {};
    if (raw < 0 || fstat(raw, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (++read_per_user[st.st_uid] > kMaxLedgerEntriesPerUser) continue;
    // The owner holds an exclusive lock for its whole life: a shared one we can take means it is gone.
    if (flock(raw, LOCK_SH | LOCK_NB) == 0) {
      RemoveIfSameFile(dir_fd_, item->d_name, st);
      continue;
    }
    if (errno != EWOULDBLOCK) continue;
    std::optional<LedgerEntry> entry = ReadRecord(raw, st.st_uid);
    // A live entry we could not read whole this time (a writer preempted mid-write): its last good reading.
    if (!entry) {
      auto last = last_good_.find(item->d_name);
      if (last != last_good_.end()) entry = last->second;
    }
    if (!entry) continue;
    readings[item->d_name] = *entry;
    others.push_back(std::move(*entry));
  }
  last_good_ = std::move(readings);
  return others;
}

// ---- ids and places ----

std::string DefaultLedgerDir() {
  if (const char* dir = getenv("HEADROOM_LEDGER_DIR"); dir != nullptr && *dir != '\0') return dir;
  struct stat st {};
  if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode)) return "/dev/shm/headroom-ledger";
  return "/tmp/headroom-ledger";
}

std::string ThisBuildId() {
  const pid_t pid = getpid();
  // /proc/self/stat: "pid (comm) state ppid ...", starttime is field 22; comm may hold spaces and parentheses,
  // so the fields are counted from the last ')'.
  std::string text, err;
  std::string start_ticks = "0";  // unreadable /proc: still an id, only not unique across pid reuse
  const size_t close_paren = ReadWholeFile("/proc/self/stat", &text, &err) ? text.rfind(')') : std::string::npos;
  if (close_paren != std::string::npos) {
    std::istringstream fields(text.substr(close_paren + 1));
    std::string field;
    for (int number = 3; number <= 22 && fields >> field; ++number) {
      if (number == 22) start_ticks = field;
    }
  }
  return fmt::format("{}-{}", pid, start_ticks);
}

}  // namespace headroom
