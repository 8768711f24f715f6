// .ninja_headroom (before: .headroom_history, migrated on open): a line-oriented, versioned, append-only file of
// job peaks, compacted like ninja's log.
//   # headroom history v2
//   C <id> <class key>                                   class ids are dense, in order of first use
//   E <class id> <cmd hash hex> <peak> <ms> <method> <outcome> <rise> <output>
// v1 (read, then rewritten as v2) had no <rise> field.
// Fields are tab-separated; the class key and the output are last and escape \ TAB and newline.
#include "headroom/history/history_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "headroom/history/history_text.h"
#include "headroom/util/digits.h"
#include "headroom/util/disk.h"
#include "headroom/util/replace_file.h"

namespace headroom {
namespace {

using namespace history_text;

constexpr std::string_view kHistoryMagic = "# headroom history v";
constexpr int kVersion = 2;
constexpr int kOldestReadVersion = 1;  // v1: no rise curve

// The 16 digits headroom writes go through ParseDigits (hex from_chars was the costliest step of
// loading); from_chars still reads anything else it accepted before, such as extra leading zeros.
bool ParseCommandHash(std::string_view text, uint64_t* value) {
  return ParseDigits(text, 16, 16, value) || ParseInt(text, value, 16);
}

// The fields of a record line after "E<TAB>", split at each tab and converted with the general parsers:
// class id, command hash, peak, duration, method, outcome; *output is what follows.
bool SplitRecordFields(std::string_view line, uint32_t* class_id, uint64_t* hash, HistoryRecord* record,
                       std::string_view* output, bool with_rise) {
  std::string_view field;
  if (!NextField(&line, &field) || !ParseInt(field, class_id)) return false;
  if (!NextField(&line, &field) || !ParseCommandHash(field, hash)) return false;
  if (!ParseRunFields(&line, record, with_rise)) return false;
  *output = line;
  return true;
}

// Reads fields left to right as they are scanned: digits, then the tab that ends them.
class FieldScanner {
 public:
  explicit FieldScanner(std::string_view text) : at_(text.data()), end_(text.data() + text.size()) {}

  // 1..max_digits digits of `base` (10 or 16) and a tab.
  bool Number(int base, size_t max_digits, uint64_t* value) {
    const char* start = at_;
    uint64_t result = 0;
    for (int digit; at_ < end_ && (digit = digits_detail::kDigitValue[static_cast<unsigned char>(*at_)]) >= 0 &&
                    digit < base;
         ++at_) {
      result = result * static_cast<uint64_t>(base) + static_cast<uint64_t>(digit);
    }
    const size_t count = static_cast<size_t>(at_ - start);
    *value = result;
    return count > 0 && count <= max_digits && Tab();
  }
  // One character and a tab.
  bool Char(char* c) {
    if (at_ == end_) return false;
    *c = *at_++;
    return Tab();
  }
  // Everything up to the next tab, and the tab.
  bool Field(std::string_view* field) {
    const char* start = at_;
    while (at_ < end_ && *at_ != '\t') ++at_;
    *field = {start, static_cast<size_t>(at_ - start)};
    return Tab();
  }
  std::string_view Rest() const { return {at_, static_cast<size_t>(end_ - at_)}; }

 private:
  bool Tab() { return at_ < end_ && *at_++ == '\t'; }

  const char* at_;
  const char* end_;
};

// SplitRecordFields for the lines headroom writes, in one pass without a search for each tab (the costliest
// step of loading). Digit counts stay below where a value could overflow; anything it declines (a 20-digit
// number, a sign) goes to SplitRecordFields, so both accept exactly the same lines.
bool ScanRecordFields(std::string_view line, uint32_t* class_id, uint64_t* hash, HistoryRecord* record,
                      std::string_view* output, bool with_rise) {
  FieldScanner scan(line);
  uint64_t id, peak, duration;
  char method, outcome;
  if (!scan.Number(10, 9, &id) || !scan.Number(16, 16, hash) || !scan.Number(10, 19, &peak) ||
      !scan.Number(10, 18, &duration) || !scan.Char(&method) || !IsPeakMethod(method) || !scan.Char(&outcome) ||
      !IsOutcome(outcome)) {
    return false;
  }
  std::string_view rise;
  if (with_rise && (!scan.Field(&rise) || !RiseCurve::Parse(rise, &record->rise))) return false;
  *class_id = static_cast<uint32_t>(id);
  record->peak_bytes = peak;
  record->duration_ms = static_cast<int64_t>(duration);
  record->method = static_cast<PeakMethod>(method);
  record->outcome = static_cast<JobOutcome>(outcome);
  *record = ClampedToRecordable(*record);  // as ParseRunFields does on the other path
  *output = scan.Rest();
  return true;
}

// The legacy file beside `path` (same directory, kLegacyFileName).
std::string LegacyPathBeside(const std::string& path) {
  const size_t slash = path.rfind('/');
  return (slash == std::string::npos ? std::string() : path.substr(0, slash + 1)) + HistoryStore::kLegacyFileName;
}

// Reads `path`, or its legacy name when it is missing; *legacy_path is set when the legacy file was read.
DiskInterface::ReadStatus ReadHistoryOrLegacy(const std::string& path, std::string* contents, std::string* error,
                                              std::string* legacy_path) {
  DiskInterface::ReadStatus read = ReadFileContents(path, contents, error);
  if (read != DiskInterface::ReadStatus::kNotFound) return read;
  const std::string legacy = LegacyPathBeside(path);
  read = ReadFileContents(legacy, contents, error);
  if (read == DiskInterface::ReadStatus::kOkay) *legacy_path = legacy;
  return read == DiskInterface::ReadStatus::kOtherError ? DiskInterface::ReadStatus::kNotFound : read;
}

std::string HeaderLine() { return fmt::format("{}{}\n", kHistoryMagic, kVersion); }

std::string ClassLine(uint32_t id, std::string_view key) { return fmt::format("C\t{}\t{}\n", id, Escape(key)); }

std::string EdgeLine(std::string_view output, uint64_t command_hash, uint32_t class_id, const HistoryRecord& r) {
  return fmt::format("E\t{}\t{:016x}\t{}\t{}\t{}\t{}\t{}\t{}\n", class_id, command_hash, r.peak_bytes, r.duration_ms,
                     static_cast<char>(r.method), static_cast<char>(r.outcome), r.rise.Format(), Escape(output));
}

}  // namespace

void RecentRuns::Add(const HistoryRecord& record) {
  if (size_ == 0 && !more_) {
    one_ = record;
    size_ = 1;
    return;
  }
  if (size_ == kCapacity) {  // full: the oldest run goes
    std::move(more_.get() + 1, more_.get() + kCapacity, more_.get());
    --size_;
  } else if (size_ == (more_ ? capacity_ : 1)) {  // grow; the records move to the heap at the second run
    const size_t grown = more_ ? std::min<size_t>(kCapacity, 2u * capacity_) : 2;
    auto bigger = std::make_unique<HistoryRecord[]>(grown);
    std::copy(begin(), end(), bigger.get());
    more_ = std::move(bigger);
    capacity_ = static_cast<uint8_t>(grown);
  }
  more_[size_++] = record;
}

std::string_view NameArena::Add(std::string_view name) {
  if (name.empty()) return {};
  if (name.size() > kBlockSize - used_) {
    blocks_.push_back(std::make_unique<char[]>(std::max(kBlockSize, name.size())));  // a long name fills its own
    used_ = 0;
  }
  char* stored = blocks_.back().get() + used_;
  std::copy(name.begin(), name.end(), stored);
  used_ = std::min(kBlockSize, used_ + name.size());
  return {stored, name.size()};
}

HistoryRecord ClampedToRecordable(HistoryRecord record) {
  record.peak_bytes = std::min(record.peak_bytes, kMaxRecordedPeakBytes);
  record.duration_ms = std::clamp<int64_t>(record.duration_ms, 0, kMaxRecordedDurationMs);
  return record;
}

void ClassStats::Add(const HistoryRecord& given) {
  const HistoryRecord record = ClampedToRecordable(given);  // callers outside the loaders pass raw figures
  if (record.killed()) {
    ++killed_;  // a killed job's figure is only a lower bound: keep it out of the quantile.
    return;
  }
  ++completed_;
  max_peak_ = std::max(max_peak_, record.peak_bytes);
  // Saturates rather than wrap: a class would need 2^38 year-long jobs to get here, but a sum must never be UB.
  if (__builtin_add_overflow(total_duration_ms_, record.duration_ms, &total_duration_ms_)) {
    total_duration_ms_ = std::numeric_limits<int64_t>::max();
  }
  if (recent_peaks_.size() < kRecentPeaks) {
    recent_peaks_.push_back(record.peak_bytes);
  } else {
    recent_peaks_[ring_next_] = record.peak_bytes;
    ring_next_ = (ring_next_ + 1) % kRecentPeaks;
  }
}

uint64_t ClassStats::PeakQuantile(double q) const {
  if (recent_peaks_.empty()) return 0;
  std::vector<uint64_t> sorted = recent_peaks_;
  std::sort(sorted.begin(), sorted.end());
  // Nearest rank: the smallest value with at least q of the samples at or below it.
  size_t rank = static_cast<size_t>(q * static_cast<double>(sorted.size()) + 0.999999);
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

int64_t ClassStats::MeanDurationMs() const {
  return completed_ == 0 ? 0 : total_duration_ms_ / static_cast<int64_t>(completed_);
}

HistoryStore::~HistoryStore() { Close(); }

void HistoryStore::Close() {
  if (file_) std::fclose(file_);
  file_ = nullptr;
}

uint32_t HistoryStore::InternClass(std::string_view key) {
  auto found = class_index_.find(key);
  if (found != class_index_.end()) return found->second;
  uint32_t id = static_cast<uint32_t>(classes_.size());
  classes_.emplace_back(std::string(key));
  class_index_.emplace(std::string(key), id);
  class_in_file_.push_back(false);
  return id;
}

void HistoryStore::AddToMemory(std::string_view output, uint64_t command_hash, uint32_t class_id,
                               const HistoryRecord& record) {
  const uint64_t hash = HashString(output);
  EdgeEntry* entry = edge_index_.Find(output, hash);
  if (!entry) {
    entry = &edges_.emplace_back(names_.Add(output), EdgeHistory{});
    edge_index_.Insert(entry, hash);
  }
  EdgeHistory& edge = entry->second;
  if (edge.command_hash != command_hash || edge.recent.empty()) {
    edge.recent.clear();  // a new command: measurements of the old one no longer describe this edge.
    edge.command_hash = command_hash;
  }
  edge.class_id = class_id;
  edge.recent.Add(ClampedToRecordable(record));
  classes_[class_id].Add(record);
}

bool HistoryStore::ParseLine(std::string_view line) {
  std::string_view kind, field;
  if (!NextField(&line, &kind) || kind.size() != 1) return false;
  if (kind == "C") {
    uint32_t id;
    std::string key;
    // Ids must be dense and in order, so appended lines never clash with earlier ones.
    if (!NextField(&line, &field) || !ParseInt(field, &id) || id != classes_.size()) return false;
    if (!Unescape(line, &key) || class_index_.count(key)) return false;
    InternClass(key);
    class_in_file_[id] = true;
    return true;
  }
  if (kind != "E") return false;
  uint32_t class_id;
  uint64_t hash;
  HistoryRecord record;
  const bool with_rise = file_version_ >= 2;
  if (!ScanRecordFields(line, &class_id, &hash, &record, &line, with_rise) &&
      !SplitRecordFields(line, &class_id, &hash, &record, &line, with_rise)) {
    return false;
  }
  if (class_id >= classes_.size() || line.empty()) return false;
  std::string_view output = line;  // names rarely hold an escape: use the file's bytes directly.
  if (output.find('\\') != std::string_view::npos) {
    if (!Unescape(line, &unescaped_)) return false;
    output = unescaped_;
  }
  AddToMemory(output, hash, class_id, record);
  ++records_in_file_;
  return true;
}

std::string HistoryStore::Parse(std::string_view contents, bool* needs_rewrite) {
  size_t header_end = contents.find('\n');
  std::string_view header = contents.substr(0, header_end);
  if (header.substr(0, kHistoryMagic.size()) != kHistoryMagic) {
    *needs_rewrite = true;
    return fmt::format("{} is not a headroom history file; starting a new one", path_);
  }
  int version = 0;
  if (!ParseInt(header.substr(kHistoryMagic.size()), &version) || version < kOldestReadVersion || version > kVersion ||
      header_end == contents.npos) {
    *needs_rewrite = true;
    return fmt::format("{} has an unsupported version ('{}'); starting a new one", path_, header);
  }
  // An older version is read as it is and rewritten in the current one, so appended records match the header.
  if (version != kVersion) *needs_rewrite = true;
  file_version_ = version;
  size_t pos = header_end + 1;
  size_t line_number = 1;
  // The index grows as edges appear rather than being sized by the line count up front: a history holds
  // up to kRecentPerEdge lines per edge, and a table sized for every line would stay mostly empty.
  while (pos < contents.size()) {
    ++line_number;
    size_t end = contents.find('\n', pos);
    if (end == std::string_view::npos) {
      *needs_rewrite = true;  // killed mid-write: drop the partial record so appends start on a fresh line.
      return fmt::format("{} is truncated (incomplete last record); keeping the {} records before it", path_,
                         records_in_file_);
    }
    if (!ParseLine(contents.substr(pos, end - pos))) {
      *needs_rewrite = true;
      return fmt::format("{} is corrupt at line {}; keeping the {} records before it and rewriting it", path_,
                         line_number, records_in_file_);
    }
    pos = end + 1;
  }
  return "";
}

std::string HistoryStore::Open(const std::string& path) {
  Close();
  path_ = path;
  std::string contents, read_error, legacy_path;
  const DiskInterface::ReadStatus read = ReadHistoryOrLegacy(path, &contents, &read_error, &legacy_path);
  if (read == DiskInterface::ReadStatus::kOtherError) {
    return fmt::format("cannot read {}: {}; memory history disabled for this build", path, read_error);
  }
  const bool exists = read == DiskInterface::ReadStatus::kOkay;
  bool needs_rewrite = !exists || contents.empty() || !legacy_path.empty();
  std::string warning = exists && !contents.empty() ? Parse(contents, &needs_rewrite) : "";
  bool bloated = records_in_file_ >= kCompactMinRecords && records_in_file_ > kCompactRatio * LiveRecordCount();
  std::string error;
  if ((needs_rewrite || bloated) && !Compact(&error)) {
    return warning.empty() ? error : warning + "; " + error;
  }
  if (!legacy_path.empty()) std::remove(legacy_path.c_str());  // migrated: the build dir keeps ninja's names only
  if (!file_) file_ = std::fopen(path.c_str(), "ab");
  if (!file_) {
    std::string reason = fmt::format("cannot append to {}: {}", path, std::strerror(errno));
    return warning.empty() ? reason : warning + "; " + reason;
  }
  return warning;
}

std::string HistoryStore::LoadForReading(const std::string& path) {
  Close();
  path_ = path;
  std::string contents, read_error, legacy_path;
  const DiskInterface::ReadStatus read = ReadHistoryOrLegacy(path, &contents, &read_error, &legacy_path);
  if (read == DiskInterface::ReadStatus::kOtherError) return fmt::format("cannot read {}: {}", path, read_error);
  const bool exists = read == DiskInterface::ReadStatus::kOkay;
  bool needs_rewrite = false;
  return exists && !contents.empty() ? Parse(contents, &needs_rewrite) : "";
}

bool HistoryStore::AppendLine(const std::string& line, std::string* error) {
  if (!file_) return true;  // memory-only store (tests, or the file could not be opened).
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    *error = fmt::format("writing {}: {}", path_, std::strerror(errno));
    return false;
  }
  return true;
}

bool HistoryStore::WriteClassLineIfNew(uint32_t class_id, std::string* error) {
  if (class_in_file_[class_id] || !file_) return true;
  // Ids in the file are dense: classes held in memory only before this one (AddClassSample) go first.
  for (uint32_t id = 0; id <= class_id; ++id) {
    if (class_in_file_[id]) continue;
    if (!AppendLine(ClassLine(id, classes_[id].key()), error)) return false;
    class_in_file_[id] = true;
  }
  return true;
}

bool HistoryStore::Record(std::string_view output, uint64_t command_hash, std::string_view class_key,
                          const HistoryRecord& measured, std::string* error) {
  const HistoryRecord record = ClampedToRecordable(measured);  // the file holds only what a load would keep
  uint32_t class_id = InternClass(class_key);
  if (keep_completed_runs_ || record.killed()) {
    AddToMemory(output, command_hash, class_id, record);
  } else {
    classes_[class_id].Add(record);
  }
  if (!file_) return true;
  if (!WriteClassLineIfNew(class_id, error)) return false;
  if (!AppendLine(EdgeLine(output, command_hash, class_id, record), error)) return false;
  ++records_in_file_;
  return true;
}

void HistoryStore::AddClassSample(std::string_view class_key, const HistoryRecord& record) {
  classes_[InternClass(class_key)].Add(record);
}

const EdgeHistory* HistoryStore::FindEdge(std::string_view output, uint64_t command_hash) const {
  const EdgeEntry* entry = edge_index_.Find(output);
  if (!entry || entry->second.command_hash != command_hash || entry->second.recent.empty()) return nullptr;
  return &entry->second;
}

const ClassStats* HistoryStore::FindClass(std::string_view class_key) const {
  auto it = class_index_.find(class_key);
  return it == class_index_.end() ? nullptr : &classes_[it->second];
}

size_t HistoryStore::LiveRecordCount() const {
  size_t live = 0;
  for (const auto& [output, edge] : edges_) live += edge.recent.size();
  return live;
}

bool HistoryStore::Compact(std::string* error) {
  if (path_.empty()) return true;
  Close();
  // Only classes still used by an edge survive; ids are renumbered densely in first-use order.
  std::vector<int64_t> new_id(classes_.size(), -1);
  std::string text = HeaderLine();
  uint32_t next_id = 0;
  for (const auto& [output, edge] : edges_) {
    if (new_id[edge.class_id] < 0) {
      new_id[edge.class_id] = next_id;
      text += ClassLine(next_id++, classes_[edge.class_id].key());
    }
    for (const HistoryRecord& record : edge.recent) {
      text += EdgeLine(output, edge.command_hash, static_cast<uint32_t>(new_id[edge.class_id]), record);
    }
  }
  if (!RewriteLocked(text, error)) return false;
  // Mirror the renumbering in memory so later appends use the ids the file now has.
  std::vector<ClassStats> kept;
  ClassIndex index;
  kept.reserve(next_id);
  for (uint32_t old = 0; old < classes_.size(); ++old) {
    if (new_id[old] < 0) continue;
    index.emplace(classes_[old].key(), static_cast<uint32_t>(kept.size()));
    kept.push_back(std::move(classes_[old]));
  }
  for (auto& [output, edge] : edges_) edge.class_id = static_cast<uint32_t>(new_id[edge.class_id]);
  classes_ = std::move(kept);
  class_index_ = std::move(index);
  class_in_file_.assign(classes_.size(), true);
  records_in_file_ = LiveRecordCount();
  file_ = std::fopen(path_.c_str(), "ab");
  if (!file_) {
    *error = fmt::format("cannot append to {}: {}", path_, std::strerror(errno));
    return false;
  }
  return true;
}

bool HistoryStore::RewriteLocked(const std::string& text, std::string* error) {
  // Two headroom processes in one build dir may both compact: each writes its own exclusive temp file, and
  // they take turns under a lock on the file being replaced, so the file is always one whole rewrite.
  const int fd = open(path_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  std::string lock_error, write_error;
  std::optional<PolledFileLock> lock;
  if (fd >= 0) lock.emplace(fd, kCompactLockWaitMs, &lock_error);
  RemoveStaleTempFiles(path_, kStaleTempAgeS);  // a compaction killed mid-write
  const bool ok = (fd < 0 || lock->locked()) && ReplaceFileContents(path_, text, 0666, &write_error);
  lock.reset();
  if (fd >= 0) close(fd);
  if (!ok) {
    *error = fmt::format("cannot rewrite {}: {}; memory history kept in memory only", path_,
                         write_error.empty() ? lock_error : write_error);
  }
  return ok;
}

}  // namespace headroom
