// The per-user store file read entry by entry (a C or E line and the r lines under it), from memory or
// streamed from a file, and one entry written back: shared by the store's full load, its build-time index
// and its streaming merge, so none of them needs the whole file or a parsed copy of it in memory.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "headroom/history/history_store.h"

namespace headroom {

struct StoreEntry {
  char kind = 0;                        // 'C' (a job class) or 'E' (an edge)
  std::string class_key;                // C: the class key
  uint64_t key = 0;                     // E: PathNormaliser::EdgeKey
  std::string output;                   // E: the normalised output, for people reading the file
  int64_t last_used_s = 0;
  std::vector<HistoryRecord> records;   // oldest first, at most `cap` of them (the last ones read)
  uint64_t offset = 0;                  // where its first line starts in the text read
  uint64_t length = 0;                  // its bytes, up to and including its last record's newline
};

// Appends `record` to an entry's records, dropping the oldest past `cap`.
void AddCapped(std::vector<HistoryRecord>* records, const HistoryRecord& record, size_t cap);

class StoreEntryReader {
 public:
  static constexpr std::string_view kMagic = "# headroom user store v";
  static constexpr int kVersion = 2;  // the newest format this reader knows; v1 runs have no rise curve

  // Reads `text` (a whole file, or one entry cut out of one when `has_header` is false).
  StoreEntryReader(std::string_view text, std::string name, bool has_header = true);
  // Streams `file` from its current position (its start: the header comes first).
  StoreEntryReader(std::FILE* file, std::string name);

  // Checks the header line and reads its version. Returns what is wrong ("" when readable; also "" for a
  // newer version, which the caller must then leave alone).
  std::string ReadHeader(int* version);
  // The next entry; false at the end or at damage. After damage, damage() says where, and the entries
  // returned before it (the one being read included) are what the file held before it.
  bool Next(StoreEntry* entry);
  const std::string& damage() const { return damage_; }
  // Where class samples and edge runs are capped (UserStore::kSamplesPerClass / kRunsPerEdge).
  void set_caps(size_t class_samples, size_t edge_runs) {
    class_cap_ = class_samples;
    edge_cap_ = edge_runs;
  }
  // The format of an entry cut out of a file (no header to read it from): the file's version.
  void set_version(int version) { version_ = version; }

 private:
  bool ReadLine(std::string_view* line);
  bool ReadHead(std::string_view line, StoreEntry* entry);
  bool Fail(const char* what);

  std::string_view text_;
  std::FILE* file_ = nullptr;
  std::string name_;
  size_t pos_ = 0;               // text: where the next line starts
  uint64_t offset_ = 0;          // of the next line
  uint64_t line_offset_ = 0;     // of the line ReadLine returned last
  size_t line_number_ = 0;
  char* buffer_ = nullptr;       // getline's, for a file
  size_t buffer_size_ = 0;
  std::string held_;             // a head line read past the end of the previous entry
  bool holding_ = false;
  uint64_t held_offset_ = 0;
  bool failed_ = false;
  std::string damage_;
  size_t class_cap_ = SIZE_MAX;
  size_t edge_cap_ = SIZE_MAX;
  int version_ = kVersion;  // of the text being read (ReadHeader, set_version)

 public:
  ~StoreEntryReader();
  StoreEntryReader(const StoreEntryReader&) = delete;
  StoreEntryReader& operator=(const StoreEntryReader&) = delete;
};

// The entry as the file spells it: its head line, then one r line per record.
void AppendStoreEntry(const StoreEntry& entry, std::string* text);

}  // namespace headroom
