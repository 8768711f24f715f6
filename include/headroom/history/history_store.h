// The memory history (.ninja_headroom in the build dir): measured peaks and durations per edge and
// aggregates per job class, loaded at start, appended to as jobs finish, compacted when bloated.
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "headroom/history/rise_curve.h"
#include "headroom/util/flat_index.h"

namespace headroom {

// How a peak was measured. A cgroup peak is exact; a process-tree poll may miss short spikes;
// ru_maxrss is the largest single process only, i.e. a lower bound for multi-process tools such as nvcc.
enum class PeakMethod : char { kUnknown = 'u', kCgroup = 'c', kProcessTree = 't', kRusage = 'r' };

// How the job ended. Killed jobs never reached their real peak: their figure is a lower bound.
enum class JobOutcome : char { kCompleted = 'c', kOomKilled = 'o', kSafetyKilled = 's' };

struct HistoryRecord {
  uint64_t peak_bytes = 0;
  int64_t duration_ms = 0;
  PeakMethod method = PeakMethod::kUnknown;
  JobOutcome outcome = JobOutcome::kCompleted;
  RiseCurve rise{};  // how its memory rose (format v2 on); unknown in records read from v1 files.
  bool killed() const { return outcome != JobOutcome::kCompleted; }
};

// The largest figures history keeps. A history file (or one imported from elsewhere) may say anything, and
// the sums and scalings done with these figures must not overflow: 1 PiB and a year are beyond any real job,
// and far below where a sum of 2^32 durations or a peak times a margin of a few could overflow.
inline constexpr uint64_t kMaxRecordedPeakBytes = uint64_t{1} << 50;
inline constexpr int64_t kMaxRecordedDurationMs = int64_t{366} * 24 * 3600 * 1000;
// `record` with its peak and duration brought into [0, the maxima above].
HistoryRecord ClampedToRecordable(HistoryRecord record);

// The last few runs of one edge, oldest first, read like a vector. Most edges have run once since their
// command last changed, so the first record lives inline: a 50k-edge history needs no allocation per edge.
// Later runs go to the heap in 2, 4, then kCapacity slots.
class RecentRuns {
 public:
  static constexpr size_t kCapacity = 8;

  RecentRuns() = default;
  RecentRuns(RecentRuns&&) noexcept = default;
  RecentRuns& operator=(RecentRuns&&) noexcept = default;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const HistoryRecord* begin() const { return data(); }
  const HistoryRecord* end() const { return data() + size_; }
  const HistoryRecord& operator[](size_t i) const { return data()[i]; }
  const HistoryRecord& front() const { return data()[0]; }
  const HistoryRecord& back() const { return data()[size_ - 1]; }

  void clear() { size_ = 0; }
  // Appends `record`, dropping the oldest when kCapacity are held.
  void Add(const HistoryRecord& record);

 private:
  const HistoryRecord* data() const { return more_ ? more_.get() : &one_; }

  HistoryRecord one_;                       // the only record while there has been one
  std::unique_ptr<HistoryRecord[]> more_;   // all of them once a second arrives
  uint8_t size_ = 0;
  uint8_t capacity_ = 0;                    // of more_
};

// The history of one edge (first output path) with its current command.
struct EdgeHistory {
  uint64_t command_hash = 0;
  uint32_t class_id = 0;
  RecentRuns recent;  // oldest first, at most HistoryStore::kRecentPerEdge.
};

// Output names stored back to back in blocks that never move, so entries and the index can point at them
// without one allocation (and its header and rounding) per name.
class NameArena {
 public:
  std::string_view Add(std::string_view name);

 private:
  static constexpr size_t kBlockSize = 64 * 1024;
  std::vector<std::unique_ptr<char[]>> blocks_;
  size_t used_ = kBlockSize;  // in the last block; full until the first Add
};

// Aggregates over completed jobs of one class (rule + tool + flags without file names).
class ClassStats {
 public:
  static constexpr size_t kRecentPeaks = 64;  // window for the quantile: recent builds matter most.

  explicit ClassStats(std::string key) : key_(std::move(key)) {}
  void Add(const HistoryRecord& record);

  const std::string& key() const { return key_; }
  uint64_t completed() const { return completed_; }  // completed jobs seen (history + this build).
  uint64_t killed() const { return killed_; }
  uint64_t max_peak() const { return max_peak_; }
  // The q-quantile (0..1) of the recent completed peaks, nearest-rank; 0 when none.
  uint64_t PeakQuantile(double q) const;
  int64_t MeanDurationMs() const;

 private:
  std::string key_;
  uint64_t completed_ = 0;
  uint64_t killed_ = 0;
  uint64_t max_peak_ = 0;
  int64_t total_duration_ms_ = 0;
  std::vector<uint64_t> recent_peaks_;  // ring buffer of completed peaks.
  size_t ring_next_ = 0;
};

class HistoryStore {
 public:
  static constexpr size_t kRecentPerEdge = RecentRuns::kCapacity;
  // Named like ninja's own logs, so tools and generators that expect only ninja's state leave it alone.
  static constexpr const char* kFileName = ".ninja_headroom";
  // Where headroom before 0.x kept it; read once when kFileName is missing, then migrated and removed.
  static constexpr const char* kLegacyFileName = ".headroom_history";
  // Compact at load when the file holds this many records and over 3x the live ones.
  static constexpr size_t kCompactMinRecords = 1000;
  static constexpr size_t kCompactRatio = 3;

  HistoryStore() = default;
  ~HistoryStore();
  HistoryStore(const HistoryStore&) = delete;
  HistoryStore& operator=(const HistoryStore&) = delete;

  // Loads `path` (missing = empty history) and opens it for appending. Never fails hard: a foreign,
  // corrupt, truncated or newer-version file is reported in the returned warning (empty when all was
  // well) and rewritten from whatever could be read. A file that cannot be written leaves the store
  // working in memory, also with a warning.
  std::string Open(const std::string& path);
  // Reads `path` without ever writing it (for `-t memstats`): a damaged file gives a warning and
  // whatever could be read. A missing file is looked for under its legacy name.
  std::string LoadForReading(const std::string& path);

  // Adds one finished (or killed) job and appends it to the file, flushed. A changed command hash
  // starts the edge's history afresh. Returns false with *error set when the file write failed
  // (the record is still kept in memory).
  bool Record(std::string_view output, uint64_t command_hash, std::string_view class_key,
              const HistoryRecord& record, std::string* error);

  // A build estimates an edge again only after a kill (to requeue it), never once it completed: with
  // false, a completed run is written to the file and counted in its class, but the edge's runs in memory
  // are left as loaded, so a large build does not hold one entry per job it ran. Default true.
  void set_keep_completed_runs(bool keep) { keep_completed_runs_ = keep; }

  // Adds a measurement made elsewhere (the user store) to a class, in memory only: never written here.
  void AddClassSample(std::string_view class_key, const HistoryRecord& record);

  // The edge's history, or nullptr when it has none for this command hash.
  const EdgeHistory* FindEdge(std::string_view output, uint64_t command_hash) const;
  const ClassStats* FindClass(std::string_view class_key) const;
  const ClassStats& ClassById(uint32_t id) const { return classes_[id]; }

  // Rewrites the file with only the live records (temp file + rename). Also done by Open when bloated.
  bool Compact(std::string* error);
  void Close();

  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };
  using ClassIndex = std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>>;
  // (output, history) in order of first appearance; the output's bytes live in the store's name arena.
  using EdgeEntry = std::pair<std::string_view, EdgeHistory>;
  const std::deque<EdgeEntry>& edges() const { return edges_; }
  const std::vector<ClassStats>& classes() const { return classes_; }

  size_t edge_count() const { return edges_.size(); }
  size_t class_count() const { return classes_.size(); }
  size_t records_in_file() const { return records_in_file_; }
  size_t LiveRecordCount() const;

 private:

  // Parses the whole file; returns a warning for damage, sets *needs_rewrite when the file must be rebuilt.
  std::string Parse(std::string_view contents, bool* needs_rewrite);
  bool ParseLine(std::string_view line);
  uint32_t InternClass(std::string_view key);
  void AddToMemory(std::string_view output, uint64_t command_hash, uint32_t class_id, const HistoryRecord& record);
  bool AppendLine(const std::string& line, std::string* error);
  // Replaces the file with `text` under a lock on it (Compact's write).
  bool RewriteLocked(const std::string& text, std::string* error);
  static constexpr int kCompactLockWaitMs = 2000;  // a rewrite takes milliseconds; a stopped holder is skipped
  static constexpr int64_t kStaleTempAgeS = 600;   // an older temp file whose writer looks dead is a leftover
  bool WriteClassLineIfNew(uint32_t class_id, std::string* error);

  struct EntryOutput {
    std::string_view operator()(const EdgeEntry& entry) const { return entry.first; }
  };

  std::string path_;
  std::FILE* file_ = nullptr;
  // A deque (elements never move) indexed by a flat table: loading is one probe and two small
  // allocations per new edge, where a node-based map needed four and missed the cache more.
  std::deque<EdgeEntry> edges_;
  FlatIndex<EdgeEntry, EntryOutput> edge_index_;
  NameArena names_;
  std::string unescaped_;  // scratch for the rare escaped name while parsing.
  std::vector<ClassStats> classes_;
  ClassIndex class_index_;
  std::vector<bool> class_in_file_;
  size_t records_in_file_ = 0;
  int file_version_ = 0;  // the version of the file being parsed: v1 records have no rise curve
  bool keep_completed_runs_ = true;
};

}  // namespace headroom
