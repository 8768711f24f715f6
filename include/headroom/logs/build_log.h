// .ninja_log: one line per output with start/end time, mtime and command hash.
// Reads v4-v7; keeps writing the version a ninja 1.11 (v5) or 1.12 (v6) left behind, else v7 as 1.13.2.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "headroom/graph/graph.h"

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
  static constexpr int kOldestReadableVersion = 4;
  static constexpr int kCurrentVersion = 7;

  // Which outputs recompaction may drop (no producing edge and no file on disk).
  class Liveness {
   public:
    virtual ~Liveness() = default;
    virtual bool IsPathDead(std::string_view path) const = 0;
  };

  BuildLog();
  ~BuildLog();

  // Loads the log; a missing file is kNotFound (not an error). A log of an unreadable version
  // is deleted with ninja's warning, and the next write starts a fresh v7 log.
  LoadStatus Load(const std::string& path, std::string* err);

  // Prepares appending; recompacts first when the log is bloated. The file itself is opened lazily.
  bool OpenForWrite(const std::string& path, const Liveness& liveness, std::string* err);
  bool RecordCommand(Edge* edge, int start_time, int end_time, TimeStamp mtime = 0);
  void Close();

  BuildLogEntry* LookupByOutput(std::string_view path);
  const std::unordered_map<std::string_view, std::unique_ptr<BuildLogEntry>>& entries() const { return entries_; }

  // The version this log will be written in (v5, v6 or v7).
  int write_version() const { return write_version_; }
  // v6 and later record the filesystem time at command start as the mtime.
  bool records_start_time() const { return write_version_ >= 6; }
  // Hash of a command in this log's format (MurmurHash64A for v5/v6, rapidhash for v7).
  uint64_t HashCommand(std::string_view command) const;
  static uint64_t HashCommandMurmur(std::string_view command);
  static uint64_t HashCommandRapid(std::string_view command);

  // Rewrites the log keeping the last entry per live output.
  bool Recompact(const std::string& path, const Liveness& liveness, std::string* err);
  // Replaces recorded mtimes with the files' current mtimes (all, or only `outputs` when non-empty).
  bool Restat(std::string_view path, const DiskInterface& disk, const std::vector<std::string>& outputs,
              std::string* err);

  // Set by Load when the file needs rewriting (old version upgrade or bloat).
  bool needs_recompaction() const { return needs_recompaction_; }

 private:
  bool OpenForWriteIfNeeded();
  bool WriteEntry(FILE* f, const BuildLogEntry& entry);

  std::unordered_map<std::string_view, std::unique_ptr<BuildLogEntry>> entries_;  // keys point into entry->output.
  FILE* log_file_ = nullptr;
  std::string log_file_path_;
  int write_version_ = kCurrentVersion;
  bool needs_recompaction_ = false;
};

}  // namespace headroom
