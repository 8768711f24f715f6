// The per-user history store ($XDG_CACHE_HOME/headroom, as ccache keeps its cache): measured peaks keyed so
// they survive a new build directory, shared by every build of the user, safe to use from several at once.
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "headroom/history/history_store.h"
#include "headroom/history/portable_key.h"
#include "headroom/history/store_entries.h"

namespace headroom {

struct UserStoreLimits {
  uint64_t max_bytes = 8ull << 20;            // the file is cut to this size, least recently used first
  int64_t max_age_s = 90ll * 24 * 60 * 60;    // records not refreshed for this long are dropped
  int lock_wait_ms = 10000;                   // a build waits this long for another one's write
};

// Where the store lives: --store=DIR, then $HEADROOM_STORE, then DefaultUserStoreDir(). "" when disabled
// (--no-store, HEADROOM_STORE=off) or when no home is known.
std::string ResolveUserStoreDir(const char* flag_dir, bool disabled_by_flag);
// $XDG_CACHE_HOME/headroom, else ~/.cache/headroom. Builds stay silent when it cannot be created.
std::string DefaultUserStoreDir();

class UserStore {
 public:
  static constexpr const char* kFileName = "history";
  static constexpr const char* kLockName = "history.lock";
  static constexpr int kVersion = StoreEntryReader::kVersion;
  static constexpr size_t kRunsPerEdge = RecentRuns::kCapacity;
  static constexpr size_t kSamplesPerClass = ClassStats::kRecentPeaks;

  UserStore(std::string dir, PathNormaliser normaliser, UserStoreLimits limits = {});

  // Reads the whole store into contents() (missing = empty), for tools. Returns one warning when it is
  // damaged, unreadable, read-only or from a newer headroom (left untouched then), "" when all is well.
  std::string Load();

  // For a build: defers loading to the first EnsureLoaded, so a build with nothing to do never reads the
  // store; then `warn` gets the load's warning and `seed_target` the store's classes (SeedClasses; they are
  // not kept here after, so class_count() is then 0). A build
  // loads the classes only: edges are indexed (key, place in the file, 16 bytes each) and read back from the
  // file, kept open, when FindEdge asks for one, so the store is never held in memory as a whole.
  void LoadLazily(HistoryStore* seed_target, std::function<void(const std::string&)> warn);
  // Loads the store now if LoadLazily deferred it (a cheap check once done).
  void EnsureLoaded() {
    if (lazy_ && !loaded_) LoadNow();
  }

  // The key of an edge (see PathNormaliser::EdgeKey) and the runs stored under it, or nullptr. After a lazy
  // load the result is read from the file and valid until the next FindEdge.
  uint64_t EdgeKey(std::string_view output, std::string_view class_key) const;
  const EdgeHistory* FindEdge(uint64_t key) const;
  // Gives `history` the store's figures for each class it has not measured itself (memory only), so class
  // and family estimates start warm in a new build dir. Returns how many classes were added.
  size_t SeedClasses(HistoryStore* history) const;

  // Notes one finished job of this build; written by Flush, and during the build once it holds kEarlyFlushRuns runs
  // of which the oldest is kEarlyFlushAgeS old, when the lock is free at once (FlushEarly): a long build then holds
  // few runs in memory, and one killed mid-way (a CI time limit, an OOM) keeps what it measured. (Each write streams
  // the whole file, up to 8 MiB: a count alone made a 10,000-job build write five times.)
  void Record(std::string_view output, std::string_view class_key, const HistoryRecord& record, int64_t now_s);
  static constexpr size_t kEarlyFlushRuns = 2048;
  static constexpr int64_t kEarlyFlushAgeS = 30;
  // Merges this build's records into the file: under a lock, the file is streamed twice (sizes, then the
  // merged entries written to a temp file), bounded and renamed over, so concurrent builds lose nothing,
  // readers never see half a file and the store is never in memory as a whole.
  // Returns a warning ("" when written, or nothing to write, or a warning was already given).
  std::string Flush(int64_t now_s);

  // Adds every record of a build dir's history as if this build had made it (for export).
  void AddBuildHistory(const HistoryStore& history, int64_t now_s);
  // Writes the whole store to `path` (same format) / merges `path` into the store. For CI caches.
  bool ExportTo(const std::string& path, std::string* error) const;
  bool ImportFrom(const std::string& path, int64_t now_s, std::string* error);

  const std::string& dir() const { return dir_; }
  std::string file_path() const { return dir_ + "/" + kFileName; }
  size_t edge_count() const { return indexed_ ? index_.size() : contents_.edges.size(); }
  size_t class_count() const { return contents_.classes.size(); }
  size_t pending_count() const { return pending_.size(); }

  struct StoredEdge {
    std::string output;  // normalised, for people reading the file
    int64_t last_used_s = 0;
    EdgeHistory history;  // command_hash holds the key; class_id is unused
  };
  struct StoredClass {
    int64_t last_used_s = 0;
    std::vector<HistoryRecord> samples;  // oldest first, at most kSamplesPerClass
  };
  struct Contents {
    std::unordered_map<uint64_t, StoredEdge> edges;
    std::unordered_map<std::string, StoredClass> classes;
    int version = kVersion;  // of the file read; newer ones are never written
  };
  // Parses store text into *contents; returns a warning for damage (what came before it is kept).
  static std::string Parse(std::string_view text, const std::string& name, Contents* contents);
  static std::string Serialise(const Contents& contents, const UserStoreLimits& limits, int64_t now_s);
  const Contents& contents() const { return contents_; }  // after Load (a lazy load fills the classes only)

 private:
  // One job's run, kept until Flush (48 bytes). Class keys are shared by many jobs, so each is kept once
  // (pending_class_keys_) and a run names it by index; the output's bytes live in pending_outputs_, and not
  // at all when the store already has the edge (its file entry names it).
  struct Pending {
    uint64_t key;
    HistoryRecord record;
    int64_t time_s;
    uint32_t class_index;
    uint32_t output_offset;  // into pending_outputs_, which holds "<output>\n" per run that keeps one
    static constexpr uint32_t kNoOutput = UINT32_MAX;
  };
  // Where an edge's entry lies in the file a lazy load indexed.
  struct IndexEntry {
    uint64_t key;
    uint32_t offset;
    uint32_t length;
  };
  struct FileCloser {
    void operator()(std::FILE* file) const { std::fclose(file); }
  };
  class Merge;

  // `output`: the normalised output, or null when the file names the edge.
  void AddPending(uint64_t key, const std::string* output, std::string_view class_key, const HistoryRecord& record,
                  int64_t time_s);
  void ForgetPending();
  std::string_view PendingOutput(const Pending& pending) const;
  void Apply(const Pending& pending, Contents* contents) const;
  std::string Warn(std::string message);
  void LoadNow();
  std::string LoadIndex();
  void ForgetLoaded();
  // A mid-build write: no wait for the lock, and what the build loaded stays (it still estimates).
  struct WriteMode {
    int lock_wait_ms;
    bool keep_loaded;
  };
  bool WriteMerged(const Contents* extra, int64_t now_s, WriteMode mode, std::string* error);
  WriteMode FinalWrite() const { return {limits_.lock_wait_ms, false}; }
  void FlushEarly(int64_t now_s);

  std::string dir_;
  PathNormaliser normaliser_;
  UserStoreLimits limits_;
  Contents contents_;
  bool indexed_ = false;                       // loaded lazily: edges are in index_, read from file_
  std::vector<IndexEntry> index_;              // sorted by key
  std::unique_ptr<std::FILE, FileCloser> file_;
  mutable EdgeHistory found_;                  // what FindEdge read last
  mutable std::string found_text_;
  mutable StoreEntry found_entry_;
  std::deque<Pending> pending_;                // a deque: no doubling copy of a 100k-run build's runs
  std::string pending_outputs_;
  std::vector<std::string> pending_class_keys_;
  std::unordered_map<std::string, uint32_t> pending_class_index_;
  size_t next_early_flush_at_ = kEarlyFlushRuns;  // pending runs; moved on when an early flush could not write
  bool read_only_ = false;  // newer version or unwritable: read, never written
  bool quiet_if_uncreatable_ = false;  // the default location, missing at load
  bool lazy_ = false;
  bool loaded_ = false;
  HistoryStore* seed_target_ = nullptr;
  std::function<void(const std::string&)> warn_;
  bool warned_ = false;
};

}  // namespace headroom
