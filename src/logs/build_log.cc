// .ninja_log reading, appending, recompaction and restat, byte-compatible with ninja 1.11-1.13.
// The on-disk version is kept as found (v5/v6/v7) so an older ninja can share the build directory.
#include "headroom/logs/build_log.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "headroom/util/hashes.h"
#include "headroom/util/digits.h"
#include "headroom/util/disk.h"
#include "headroom/util/messages.h"

namespace headroom {
namespace {

constexpr std::string_view kSignaturePrefix = "# ninja log v";

// The version in a header line, or 0 when the line is no header (ninja then says "too old").
// Mirrors sscanf("%d") leniency: "# ninja log v7junk" is version 7.
int ParseVersion(std::string_view first_line) {
  if (first_line.substr(0, kSignaturePrefix.size()) != kSignaturePrefix) return 0;
  std::string digits(first_line.substr(kSignaturePrefix.size()));
  return static_cast<int>(strtol(digits.c_str(), nullptr, 10));
}

// Numbers are read as leniently as ninja's atoi/strtoll/strtoull: garbage becomes 0. The fields
// ninja writes (plain digits that fit) are converted by ParseDigits; anything else (signs, spaces,
// "0x", overflow) goes through the C library, so odd lines read exactly as ninja reads them. The
// strto* calls were a fifth of loading a large log.

// atoi-like: out-of-range values are clamped instead of being undefined. Nine digits always fit an int.
int ParseMilliseconds(std::string_view field) {
  uint64_t plain;
  if (ParseDigits(field, 10, 9, &plain)) return static_cast<int>(plain);
  long value = strtol(field.data(), nullptr, 10);
  if (value > INT_MAX) return INT_MAX;
  if (value < INT_MIN) return INT_MIN;
  return static_cast<int>(value);
}

// Nanosecond mtimes have 19 digits: always within a uint64, not always within an int64.
TimeStamp ParseTimeStamp(std::string_view field) {
  uint64_t plain;
  if (ParseDigits(field, 10, 19, &plain) && plain <= INT64_MAX) return static_cast<TimeStamp>(plain);
  return strtoll(field.data(), nullptr, 10);
}

uint64_t ParseHash(std::string_view field) {
  uint64_t plain;
  if (ParseDigits(field, 16, 16, &plain)) return plain;
  return strtoull(field.data(), nullptr, 16);
}

bool FileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// True when the file exists, is non-empty and its last byte is not a newline (a torn last line).
bool EndsWithPartialLine(const std::string& path) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file || file.tellg() <= 0) return false;
  file.seekg(-1, std::ios::end);
  return file.get() != '\n';
}

}  // namespace

BuildLog::BuildLog() = default;

BuildLog::~BuildLog() { CloseFile(); }

uint64_t BuildLog::HashCommandMurmur(std::string_view command) {
  return MurmurHash64A(command.data(), command.size(), kNinjaMurmurSeed);
}

uint64_t BuildLog::HashCommandRapid(std::string_view command) {
  return RapidHashV1(command.data(), command.size(), kRapidHashDefaultSeed);
}

uint64_t BuildLog::HashCommand(std::string_view command) const {
  return write_version_ >= 7 ? HashCommandRapid(command) : HashCommandMurmur(command);
}

BuildLogEntry* BuildLog::FindOrAddEntry(std::string_view output) {
  const uint64_t hash = HashString(output);
  if (BuildLogEntry* existing = index_.Find(output, hash)) return existing;
  BuildLogEntry* entry = &storage_.emplace_back();
  entry->output = std::string(output);
  index_.Insert(entry, hash);
  ordered_entries_.push_back(entry);
  return entry;
}

LoadStatus BuildLog::Load(const std::string& path, std::string* err) {
  std::string contents;
  std::string read_err;
  switch (ReadFileContents(path, &contents, &read_err)) {
    case DiskInterface::ReadStatus::kNotFound: return LoadStatus::kNotFound;
    case DiskInterface::ReadStatus::kOtherError: *err = read_err; return LoadStatus::kError;
    case DiskInterface::ReadStatus::kOkay: break;
  }

  // Only newline-terminated lines count: ninja ignores a torn last line; a file that is only a
  // header without its newline is valid when that header names a readable version.
  char* cursor = contents.data();
  char* const end = contents.data() + contents.size();
  char* header_end = static_cast<char*>(memchr(cursor, '\n', end - cursor));
  if (contents.empty()) return LoadStatus::kSuccess;
  if (!header_end) {
    // A lone, unterminated header is still judged by its version ("# ninja" is too old).
    const int lone_version = ParseVersion(std::string_view(cursor, end - cursor));
    if (lone_version >= kOldestReadableVersion && lone_version <= kCurrentVersion) {
      write_version_ = lone_version;
      return LoadStatus::kSuccess;
    }
    header_end = end;
  }

  const int version = ParseVersion(std::string_view(cursor, header_end - cursor));
  if (version < kOldestReadableVersion || version > kCurrentVersion) {
    Warning("build log version is too {}; starting over", version < kOldestReadableVersion ? "old" : "new");
    unlink(path.c_str());
    write_version_ = kCurrentVersion;
    // Gone now, exactly as if it had never existed (recompact then leaves no file behind).
    return LoadStatus::kNotFound;
  }
  write_version_ = version;

  int total_entries = 0;
  cursor = header_end + 1;
  // At most one entry per line: sizing the index once saves every rehash of a large log.
  index_.Reserve(static_cast<size_t>(std::count(cursor, end, '\n')));
  while (char* line_end = static_cast<char*>(memchr(cursor, '\n', end - cursor))) {
    if (ParseLine(cursor, line_end)) ++total_entries;
    cursor = line_end + 1;
  }
  const int unique_entries = static_cast<int>(ordered_entries_.size());
  if (total_entries > kMinCompactionEntryCount && total_entries > unique_entries * kCompactionRatio) {
    needs_recompaction_ = true;
  }
  return LoadStatus::kSuccess;
}

bool BuildLog::ParseLine(char* line, char* line_end) {
  // start \t end \t mtime \t path \t hash; lines with fewer fields (garbage, blank) are skipped.
  // Each field is NUL-terminated in place, as the C library fallbacks of the number parsers need.
  std::string_view fields[5];
  char* start = line;
  for (int i = 0; i < 4; ++i) {
    char* tab = static_cast<char*>(memchr(start, '\t', line_end - start));
    if (!tab) return false;
    *tab = '\0';
    fields[i] = std::string_view(start, tab - start);
    start = tab + 1;
  }
  *line_end = '\0';
  fields[4] = std::string_view(start, line_end - start);
  BuildLogEntry* entry = FindOrAddEntry(fields[3].data());  // up to a NUL, as ninja reads it.
  entry->start_time = ParseMilliseconds(fields[0]);
  entry->end_time = ParseMilliseconds(fields[1]);
  entry->mtime = ParseTimeStamp(fields[2]);
  entry->command_hash = ParseHash(fields[4]);
  return true;
}

bool BuildLog::OpenForWrite(const std::string& path, const Liveness& liveness, std::string* err) {
  if (needs_recompaction_ && !Recompact(path, liveness, err)) return false;
  log_file_path_ = path;
  return true;
}

bool BuildLog::OpenForWriteIfNeeded() {
  if (log_file_ || log_file_path_.empty()) return true;
  // Finish a torn last line first so our first entry does not fuse with it.
  const bool needs_newline = EndsWithPartialLine(log_file_path_);
  log_file_ = fopen(log_file_path_.c_str(), "ab");
  if (!log_file_) return false;
  // Line buffering: each entry reaches the file whole, so a concurrent reader or a crash never
  // sees half an entry except at the very end.
  if (setvbuf(log_file_, nullptr, _IOLBF, BUFSIZ) != 0) return false;
  fcntl(fileno(log_file_), F_SETFD, FD_CLOEXEC);  // children must not inherit the log.
  if (ftell(log_file_) == 0) {
    if (fprintf(log_file_, "%.*s%d\n", static_cast<int>(kSignaturePrefix.size()), kSignaturePrefix.data(),
                write_version_) < 0) {
      return false;
    }
  } else if (needs_newline && fputc('\n', log_file_) == EOF) {
    return false;
  }
  return fflush(log_file_) == 0;
}

void BuildLog::CloseFile() {
  if (log_file_) fclose(log_file_);
  log_file_ = nullptr;
}

void BuildLog::Close() {
  OpenForWriteIfNeeded();  // ninja creates the log here even when nothing was recorded.
  CloseFile();
}

bool BuildLog::WriteEntry(FILE* f, const BuildLogEntry& entry) {
  return fprintf(f, "%d\t%d\t%" PRId64 "\t%s\t%" PRIx64 "\n", entry.start_time, entry.end_time, entry.mtime,
                 entry.output.c_str(), entry.command_hash) > 0;
}

bool BuildLog::RecordCommand(Edge* edge, int start_time, int end_time, TimeStamp mtime) {
  const uint64_t command_hash = HashCommand(edge->EvaluateCommand(/*incl_rsp_file=*/true));
  for (Node* output : edge->outputs) {
    BuildLogEntry* entry = FindOrAddEntry(output->path);
    entry->command_hash = command_hash;
    entry->start_time = start_time;
    entry->end_time = end_time;
    entry->mtime = mtime;
    if (!OpenForWriteIfNeeded()) return false;
    if (log_file_ && (!WriteEntry(log_file_, *entry) || fflush(log_file_) != 0)) return false;
  }
  return true;
}

bool BuildLog::ReplaceLogFile(const std::string& path, const std::string& temp_path, std::string* err) {
  FILE* f = fopen(temp_path.c_str(), "wb");
  if (!f) {
    *err = strerror(errno);
    return false;
  }
  bool ok = fprintf(f, "%.*s%d\n", static_cast<int>(kSignaturePrefix.size()), kSignaturePrefix.data(),
                    write_version_) > 0;
  for (const BuildLogEntry* entry : ordered_entries_) {
    if (!ok) break;
    ok = WriteEntry(f, *entry);
  }
  if (fclose(f) != 0) ok = false;
  if (!ok) {
    *err = strerror(errno);
    unlink(temp_path.c_str());
    return false;
  }
  // rename() replaces atomically; a reader sees either the old or the new log, never a mix.
  if (rename(temp_path.c_str(), path.c_str()) < 0) {
    *err = strerror(errno);
    return false;
  }
  return true;
}

bool BuildLog::Recompact(const std::string& path, const Liveness& liveness, std::string* err) {
  CloseFile();  // an appended-to handle would point at the replaced file; reopen lazily later.
  std::vector<BuildLogEntry*> live;
  live.reserve(ordered_entries_.size());
  for (BuildLogEntry* entry : ordered_entries_) {
    if (!liveness.IsPathDead(entry->output)) live.push_back(entry);
  }
  ordered_entries_ = std::move(live);
  index_.Clear();  // an open-addressing table has no cheap erase; rebuilding it is linear anyway.
  index_.Reserve(ordered_entries_.size());
  for (BuildLogEntry* entry : ordered_entries_) index_.Insert(entry);
  if (!ReplaceLogFile(path, path + ".recompact", err)) return false;
  needs_recompaction_ = false;
  return true;
}

bool BuildLog::Restat(std::string_view path_view, const DiskInterface& disk, const std::vector<std::string>& outputs,
                      std::string* err) {
  const std::string path(path_view);
  if (!FileExists(path)) return true;  // nothing recorded, nothing to restat.
  CloseFile();
  for (BuildLogEntry* entry : ordered_entries_) {
    if (!outputs.empty() && std::find(outputs.begin(), outputs.end(), entry->output) == outputs.end()) continue;
    const TimeStamp mtime = disk.Stat(entry->output, err);
    if (mtime == -1) return false;
    entry->mtime = mtime;
  }
  return ReplaceLogFile(path, path + ".restat", err);
}

}  // namespace headroom
