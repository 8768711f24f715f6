// .ninja_log: one line per output with start/end time, mtime and command hash.
// Reads v5-v7; keeps writing the version a ninja 1.11 (v5) or 1.12 (v6) left behind, else v7 as 1.13.2.
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "headroom/graph/graph.h"
#include "headroom/util/flat_index.h"

namespace headroom {

class DiskInterface;

enum class LoadStatus { kError, kNotFound, kSuccess };

struct BuildLogEntry {
  std::string output;
  uint64_t command_hash = 0;
  int start_time = 0;  // ms since the recording run started.
  int end_time = 0;
  TimeStamp mtime = 0;
};

class BuildLog {
 public:
  // v4 and older (ninja <= 1.9) are discarded like ninja 1.13 does: "too old; starting over".
  static constexpr int kOldestReadableVersion = 5;
  static constexpr int kCurrentVersion = 7;
  // Recompact when more than this many entries were read and more than kCompactionRatio per output.
  static constexpr int kMinCompactionEntryCount = 100;
  static constexpr int kCompactionRatio = 3;

  // Which outputs recompaction may drop (no producing edge and no file on disk).
  class Liveness {
   public:
    virtual ~Liveness() = default;
    virtual bool IsPathDead(std::string_view path) const = 0;
  };

  BuildLog();
  ~BuildLog();

  // Loads the log; a missing file is kNotFound (not an error). A log of an unreadable version
  // is deleted with ninja's warning (printed here, *err stays empty; result kSuccess), and the next
  // write starts a fresh v7 log. Lines that are not complete 5-field lines are skipped like ninja does.
  LoadStatus Load(const std::string& path, std::string* err);

  // Prepares appending; recompacts first when the log is bloated. The file itself is opened lazily.
  bool OpenForWrite(const std::string& path, const Liveness& liveness, std::string* err);
  // Appends one line per output of `edge` (hash of EvaluateCommand(true)) and flushes it.
  bool RecordCommand(Edge* edge, int start_time, int end_time, TimeStamp mtime = 0);
  // Closes the file, creating it (header only) if OpenForWrite was called but nothing recorded yet:
  // ninja does this before running a generator edge. A later RecordCommand reopens in append mode.
  // The destructor only closes, so a build that records nothing leaves no .ninja_log behind.
  void Close();

  BuildLogEntry* LookupByOutput(std::string_view path) { return index_.Find(path); }
  // Entries in the order their outputs first appeared (the order recompaction and restat write).
  const std::vector<BuildLogEntry*>& ordered_entries() const { return ordered_entries_; }

  // The version this log will be written in (v5, v6 or v7).
  int write_version() const { return write_version_; }
  // v6 and later record the filesystem time at command start as the mtime.
  bool records_start_time() const { return write_version_ >= 6; }
  // Hash of a command in this log's format (MurmurHash64A for v5/v6, rapidhash for v7).
  uint64_t HashCommand(std::string_view command) const;
  static uint64_t HashCommandMurmur(std::string_view command);
  static uint64_t HashCommandRapid(std::string_view command);

  // Rewrites the log (via `path`.recompact, renamed over) keeping the last entry per live output,
  // in write_version().
  bool Recompact(const std::string& path, const Liveness& liveness, std::string* err);
  // Replaces recorded mtimes with the files' current mtimes (all, or only `outputs` when non-empty;
  // names not in the log are ignored), via `path`.restat renamed over. No log file = nothing to do.
  bool Restat(std::string_view path, const DiskInterface& disk, const std::vector<std::string>& outputs,
              std::string* err);

  // Set by Load when the file needs rewriting (old version upgrade or bloat).
  bool needs_recompaction() const { return needs_recompaction_; }

 private:
  bool OpenForWriteIfNeeded();
  void CloseFile();
  bool WriteEntry(FILE* f, const BuildLogEntry& entry);
  // Writes header + entries to `temp_path`, then renames it over `path`.
  bool ReplaceLogFile(const std::string& path, const std::string& temp_path, std::string* err);
  BuildLogEntry* FindOrAddEntry(std::string_view output);
  // Applies one complete log line (NUL-terminated in place); false when it is not an entry.
  bool ParseLine(char* line, char* line_end);

  struct EntryOutput {
    std::string_view operator()(const BuildLogEntry& entry) const { return entry.output; }
  };
  // A deque never moves its elements, so the index and ordered_entries_ can point into it; entries
  // dropped by recompaction stay allocated (unreachable) until the log is destroyed.
  std::deque<BuildLogEntry> storage_;
  FlatIndex<BuildLogEntry, EntryOutput> index_;  // live entries by output.
  std::vector<BuildLogEntry*> ordered_entries_;  // live entries, in first-seen order.
  FILE* log_file_ = nullptr;
  std::string log_file_path_;
  int write_version_ = kCurrentVersion;
  bool needs_recompaction_ = false;
};

}  // namespace headroom
