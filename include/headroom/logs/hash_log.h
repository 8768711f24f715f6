// .headroom_hashes: for each edge built with --content-hash, the content hash of every input and output
// it had when it last succeeded. A versioned text file sealed by a checksum line; anything else reads as empty.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace headroom {

// One file's content hash; the path is an index into HashLog's path table.
struct HashedFile {
  uint32_t path_id = 0;
  uint64_t hash = 0;
  bool operator==(const HashedFile&) const = default;
};

// What an edge read and wrote when it last succeeded (outputs in the edge's order).
struct HashRecord {
  std::vector<HashedFile> outputs;
  std::vector<HashedFile> inputs;
  bool operator==(const HashRecord&) const = default;
};

class HashLog {
 public:
  static constexpr int kVersion = 1;
  static constexpr const char* kFileName = ".headroom_hashes";

  // The hash of a file's contents, as recorded (rapidhash with a seed of its own).
  static uint64_t HashContents(std::string_view contents);
  // The checksum the closing line carries: of every byte before that line.
  static uint64_t Checksum(std::string_view text);

  // Replaces what is held by the records in `text`. false with *err (why the file is unusable: version,
  // corrupt, truncated) leaves the log empty.
  bool Parse(std::string_view text, std::string* err);
  // The file form of every record: header, path table, records, checksum line.
  std::string Serialize() const;

  // Reads `path`. A missing file is an empty log; an unusable one is an empty log and a warning in *warning.
  void Load(const std::string& path, std::string* warning);
  // Writes the file whole (temp file renamed over it). false with *err.
  bool Save(const std::string& path, std::string* err) const;

  // Records are keyed by the edge's first output.
  const HashRecord* Find(std::string_view first_output) const;
  void Set(std::string_view first_output, HashRecord record);
  void Erase(std::string_view first_output);
  // Keeps only the records whose key `keep` accepts.
  template <typename Keep>
  void EraseUnless(Keep keep) {
    for (auto it = records_.begin(); it != records_.end();) {
      if (keep(paths_[it->first])) {
        ++it;
      } else {
        it = records_.erase(it);
        changed_ = true;
      }
    }
  }

  uint32_t InternPath(std::string_view path);
  const std::string& path(uint32_t id) const { return paths_[id]; }
  // A known path's id, or -1.
  int64_t FindPath(std::string_view path) const;
  size_t size() const { return records_.size(); }
  // Whether anything changed since the last Parse/Load/Save.
  bool changed() const { return changed_; }

 private:
  void Clear();

  std::vector<std::string> paths_;
  std::unordered_map<std::string, uint32_t> path_ids_;
  std::unordered_map<uint32_t, HashRecord> records_;  // by the first output's path id
  mutable bool changed_ = false;
};

}  // namespace headroom
