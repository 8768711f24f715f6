// Writing the per-user store (user_store.h): this build's runs merged with the file under its lock, bounded
// (least recently used entries dropped first), written to a temp file and renamed over the old one.
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <unordered_set>

#include <fmt/format.h>

#include "headroom/history/store_entries.h"
#include "headroom/history/user_store.h"
#include "headroom/util/disk.h"
#include "headroom/util/replace_file.h"

namespace headroom {
namespace {

// The store holds command classes with their -D values: only its owner may read it. A store made by an
// older headroom (0755/0644) is narrowed, but only when it belongs to this user: a store someone shares on
// purpose, owned by another user, is left as it is.
void MakePrivate(int fd, const struct stat& st, mode_t private_mode) {
  if (st.st_uid == geteuid() && (st.st_mode & 077) != 0) fchmod(fd, private_mode);
}

void MakeDirPrivate(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  if (fstat(fd, &st) == 0) MakePrivate(fd, st, 0700);
  close(fd);
}

// Holds the store's lock file exclusively. Polls rather than blocks, so a build stopped while holding it
// (SIGSTOP, a debugger) costs another build lock_wait_ms, not its end.
class StoreLock {
 public:
  StoreLock(const std::string& path, int wait_ms, std::string* error) {
    fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd_ < 0) {
      *error = fmt::format("cannot open {}: {}", path, std::strerror(errno));
      return;
    }
    struct stat st;
    if (fstat(fd_, &st) == 0) MakePrivate(fd_, st, 0600);
    std::string why;
    lock_.emplace(fd_, wait_ms, &why);
    if (!lock_->locked()) *error = fmt::format("{}: {}", path, why);
  }
  ~StoreLock() {
    lock_.reset();
    if (fd_ >= 0) close(fd_);
  }
  bool locked() const { return lock_ && lock_->locked(); }

 private:
  int fd_ = -1;
  std::optional<PolledFileLock> lock_;
};

// Creates `dir` (0700) and the directories above it that are missing (0755, like mkdir -p: they hold nothing
// of the store's), and makes `dir` private.
bool MakeDirs(const std::string& dir, std::string* error) {
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    std::string prefix = dir.substr(0, slash);
    const mode_t mode = slash == std::string::npos ? 0700 : 0755;
    if (!prefix.empty() && mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) {
      *error = fmt::format("cannot create {}: {}", prefix, std::strerror(errno));
      return false;
    }
    if (slash == std::string::npos) {
      MakeDirPrivate(dir);
      return true;
    }
  }
}

}  // namespace

// One merge of the file with this build's runs (and an imported file's entries), walked more than once over
// the same inputs: for the total size, for each entry's size when over the bound, then to write the kept.
// Only the runs of this build are in memory, with two sort orders of them; the file is streamed.
class UserStore::Merge {
 public:
  Merge(const UserStore& store, const Contents* extra, int64_t now_s)
      : store_(store), extra_(extra), oldest_(now_s - store.limits_.max_age_s) {
    const std::deque<Pending>& pending = store.pending_;
    by_key_.resize(pending.size());
    for (uint32_t i = 0; i < by_key_.size(); ++i) by_key_[i] = i;
    std::sort(by_key_.begin(), by_key_.end(), [&](uint32_t a, uint32_t b) {
      return pending[a].key != pending[b].key ? pending[a].key < pending[b].key : a < b;
    });
    // By class, in the order they ran: a counting sort, with where each class's runs start.
    class_start_.assign(store.pending_class_keys_.size() + 1, 0);
    for (const Pending& one : pending) ++class_start_[one.class_index + 1];
    for (size_t c = 1; c < class_start_.size(); ++c) class_start_[c] += class_start_[c - 1];
    by_class_.resize(pending.size());
    std::vector<uint32_t> next(class_start_.begin(), class_start_.end() - 1);
    for (uint32_t i = 0; i < pending.size(); ++i) by_class_[next[pending[i].class_index]++] = i;
  }

  // Calls emit(entry) for each entry of the merged store: the file's, in its order, then imported ones it
  // lacked, then this build's new classes and edges. Entries too old or without runs are left out.
  // `old` may be null; false when it could not be read.
  template <typename Emit>
  bool Walk(std::FILE* old, const std::string& name, Emit&& emit) {
    class_seen_.assign(store_.pending_class_keys_.size(), false);
    key_seen_.assign(by_key_.size(), false);
    extra_used_edges_.clear();
    extra_used_classes_.clear();
    StoreEntry entry;
    if (old) {
      std::rewind(old);
      StoreEntryReader reader(old, name);
      reader.set_caps(kSamplesPerClass, kRunsPerEdge);
      int version = kVersion;
      if (reader.ReadHeader(&version).empty() && version <= kVersion) {
        while (reader.Next(&entry)) {
          TakeExtra(&entry);
          AddRuns(&entry);
          Offer(entry, emit);
        }
      }
      if (std::ferror(old)) return false;
    }
    if (extra_) {
      for (const auto& [key, stored] : extra_->classes) {
        if (extra_used_classes_.count(key)) continue;
        entry = StoreEntry{'C', key, 0, {}, stored.last_used_s, stored.samples};
        AddRuns(&entry);
        Offer(entry, emit);
      }
      for (const auto& [key, stored] : extra_->edges) {
        if (extra_used_edges_.count(key)) continue;
        entry = StoreEntry{'E', {}, key, stored.output, stored.last_used_s,
                           {stored.history.recent.begin(), stored.history.recent.end()}};
        AddRuns(&entry);
        Offer(entry, emit);
      }
    }
    for (uint32_t c = 0; c < class_seen_.size(); ++c) {
      if (class_seen_[c]) continue;
      entry = StoreEntry{'C', store_.pending_class_keys_[c], 0, {}, 0, {}};
      AddRuns(&entry);
      Offer(entry, emit);
    }
    for (size_t first = 0; first < by_key_.size();) {
      const size_t last = GroupEnd(first);
      if (!key_seen_[first]) {
        const Pending& one = store_.pending_[by_key_[first]];
        entry = StoreEntry{'E', {}, one.key, std::string(store_.PendingOutput(one)), 0, {}};
        AddRuns(&entry);
        Offer(entry, emit);
      }
      first = last;
    }
    return true;
  }

 private:
  template <typename Emit>
  void Offer(const StoreEntry& entry, Emit& emit) {
    if (entry.last_used_s >= oldest_ && !entry.records.empty()) emit(entry);
  }

  size_t GroupEnd(size_t first) const {
    size_t last = first + 1;
    while (last < by_key_.size() && store_.pending_[by_key_[last]].key == store_.pending_[by_key_[first]].key) ++last;
    return last;
  }

  // An imported entry newer than the file's replaces it whole (importing twice adds nothing).
  void TakeExtra(StoreEntry* entry) {
    if (!extra_) return;
    if (entry->kind == 'C') {
      auto found = extra_->classes.find(entry->class_key);
      if (found == extra_->classes.end()) return;
      extra_used_classes_.insert(entry->class_key);
      if (!entry->records.empty() && entry->last_used_s >= found->second.last_used_s) return;
      entry->last_used_s = found->second.last_used_s;
      entry->records = found->second.samples;
      return;
    }
    auto found = extra_->edges.find(entry->key);
    if (found == extra_->edges.end()) return;
    extra_used_edges_.insert(entry->key);
    if (!entry->records.empty() && entry->last_used_s >= found->second.last_used_s) return;
    entry->output = found->second.output;
    entry->last_used_s = found->second.last_used_s;
    entry->records.assign(found->second.history.recent.begin(), found->second.history.recent.end());
  }

  // This build's runs of the entry's class or edge, in the order they ran (every copy of an entry a
  // hand-edited file holds twice gets them: the last one read counts).
  void AddRuns(StoreEntry* entry) {
    const std::deque<Pending>& pending = store_.pending_;
    if (entry->kind == 'C') {
      auto found = store_.pending_class_index_.find(entry->class_key);
      if (found == store_.pending_class_index_.end()) return;
      const uint32_t c = found->second;
      class_seen_[c] = true;
      for (uint32_t i = class_start_[c]; i < class_start_[c + 1]; ++i) {
        const Pending& one = pending[by_class_[i]];
        AddCapped(&entry->records, one.record, kSamplesPerClass);
        entry->last_used_s = std::max(entry->last_used_s, one.time_s);
      }
      return;
    }
    auto first = std::lower_bound(by_key_.begin(), by_key_.end(), entry->key,
                                  [&](uint32_t i, uint64_t key) { return pending[i].key < key; });
    if (first == by_key_.end() || pending[*first].key != entry->key) return;
    key_seen_[first - by_key_.begin()] = true;
    for (auto it = first; it != by_key_.end() && pending[*it].key == entry->key; ++it) {
      const Pending& one = pending[*it];
      if (entry->records.empty() && entry->output.empty()) entry->output = store_.PendingOutput(one);
      AddCapped(&entry->records, one.record, kRunsPerEdge);
      entry->last_used_s = std::max(entry->last_used_s, one.time_s);
    }
  }

  const UserStore& store_;
  const Contents* extra_;
  const int64_t oldest_;
  std::vector<uint32_t> by_key_;       // positions in pending_, by (key, position)
  std::vector<uint32_t> by_class_;     // positions in pending_, by (class, position)
  std::vector<uint32_t> class_start_;  // where each class's runs start in by_class_
  std::vector<bool> class_seen_, key_seen_;  // key_seen_: at the first position of each key's runs
  std::unordered_set<uint64_t> extra_used_edges_;
  std::unordered_set<std::string> extra_used_classes_;
};

bool UserStore::WriteMerged(const Contents* extra, int64_t now_s, WriteMode mode, std::string* error) {
  if (!MakeDirs(dir_, error)) return false;
  StoreLock lock(dir_ + "/" + kLockName, mode.lock_wait_ms, error);
  if (!lock.locked()) return false;
  // Every writer holds this lock while its temp file exists: any temp file here now was left by a crash.
  RemoveStaleTempFiles(file_path(), 0, /*all_dead=*/true);
  // Re-read under the lock: another build may have written since this one loaded. At the end, what this build
  // loaded is let go first (nothing estimates any more once the build writes). Mid-build it stays: its index and
  // open file still describe the file it read (renamed over, not changed), enough for estimates.
  if (!mode.keep_loaded) ForgetLoaded();
  const std::string path = file_path();
  std::unique_ptr<std::FILE, FileCloser> old(std::fopen(path.c_str(), "rb"));
  if (!old && errno != ENOENT) {
    *error = fmt::format("cannot read {}: {}", path, std::strerror(errno));
    return false;
  }
  if (old) {
    StoreEntryReader header(old.get(), path);
    int version = kVersion;
    if (header.ReadHeader(&version).empty() && version > kVersion) {
      *error = fmt::format("{} was written by a newer headroom; left untouched", path);
      return false;
    }
  }
  Merge merge(*this, extra, now_s);
  const std::string header = fmt::format("{}{}\n", StoreEntryReader::kMagic, kVersion);
  std::string text;
  // First the total: most merges fit, and then every entry is kept.
  uint64_t total = header.size();
  size_t entries = 0;
  auto size_of = [&text](const StoreEntry& entry) {
    text.clear();
    AppendStoreEntry(entry, &text);
    return text.size();
  };
  if (!merge.Walk(old.get(), path, [&](const StoreEntry& entry) {
        total += size_of(entry);
        ++entries;
      })) {
    *error = fmt::format("cannot read {}: {}", path, std::strerror(errno));
    return false;
  }
  // Over the bound: whole entries are dropped, least recently used first; a smaller, older one may still fit.
  std::vector<bool> kept;
  if (total > limits_.max_bytes) {
    struct Sized {
      int64_t last_used_s;
      uint32_t size;
    };
    std::vector<Sized> sized;
    sized.reserve(entries);
    merge.Walk(old.get(), path, [&](const StoreEntry& entry) {
      sized.push_back(Sized{entry.last_used_s, static_cast<uint32_t>(size_of(entry))});
    });
    std::vector<uint32_t> order(sized.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return sized[a].last_used_s != sized[b].last_used_s ? sized[a].last_used_s > sized[b].last_used_s : a < b;
    });
    kept.assign(sized.size(), false);
    uint64_t used = header.size();
    for (uint32_t i : order) {
      if (used + sized[i].size > limits_.max_bytes) continue;
      used += sized[i].size;
      kept[i] = true;
    }
  }
  std::string temp;
  const int temp_fd = CreateTempBeside(path, 0600, &temp);
  std::unique_ptr<std::FILE, FileCloser> out(temp_fd >= 0 ? fdopen(temp_fd, "wb") : nullptr);
  if (temp_fd >= 0 && !out) close(temp_fd);
  bool ok = out && std::fwrite(header.data(), 1, header.size(), out.get()) == header.size();
  size_t ordinal = 0;
  ok = ok && merge.Walk(old.get(), path, [&](const StoreEntry& entry) {
         if (!kept.empty() && !kept[ordinal++]) return;
         text.clear();
         AppendStoreEntry(entry, &text);
         ok = ok && std::fwrite(text.data(), 1, text.size(), out.get()) == text.size();
       });
  ok = out && std::fclose(out.release()) == 0 && ok;
  if (!ok || std::rename(temp.c_str(), path.c_str()) != 0) {
    *error = fmt::format("cannot write {}: {}", path, std::strerror(errno));
    if (temp_fd >= 0) std::remove(temp.c_str());  // only a file this call created
    return false;
  }
  return true;
}

std::string UserStore::Flush(int64_t now_s) {
  if (dir_.empty() || read_only_ || pending_.empty()) return "";
  std::string error;
  struct stat st;
  const bool created_now = quiet_if_uncreatable_ && stat(dir_.c_str(), &st) != 0;
  const bool written = WriteMerged(nullptr, now_s, FinalWrite(), &error);
  ForgetPending();
  if (!written) {
    read_only_ = true;
    if (created_now && stat(dir_.c_str(), &st) != 0) return "";
    return Warn(fmt::format("headroom store: {}; this build's figures are not kept there", error));
  }
  return "";
}

// A failure here (the lock held by another build's write, an unwritable directory) keeps the runs for the next try,
// kEarlyFlushRuns runs later, or for Flush, which waits for the lock and reports what went wrong.
void UserStore::FlushEarly(int64_t now_s) {
  std::string error;
  if (WriteMerged(nullptr, now_s, WriteMode{0, true}, &error)) {
    ForgetPending();
    next_early_flush_at_ = kEarlyFlushRuns;
  } else {
    next_early_flush_at_ = pending_.size() + kEarlyFlushRuns;
  }
}

}  // namespace headroom
