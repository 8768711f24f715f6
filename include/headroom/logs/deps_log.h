// .ninja_deps v4: binary, append-only record of each output's discovered dependencies.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "headroom/graph/graph.h"
#include "headroom/logs/build_log.h"

namespace headroom {

class DepsLog {
 public:
  static constexpr int kCurrentVersion = 4;
  // Largest record body (the size field excluded) ninja reads or writes.
  static constexpr uint32_t kMaxRecordSize = (1 << 19) - 1;
  // Recompact when more than this many deps records were read and more than kCompactionRatio per output.
  static constexpr int kMinCompactionEntryCount = 1000;
  static constexpr int kCompactionRatio = 3;

  struct Deps {
    TimeStamp mtime = 0;  // output mtime recorded after the command ran.
    std::vector<Node*> nodes;
  };

  DepsLog() = default;
  ~DepsLog();

  // Loads records, interning paths into `state` and setting Node::deps_log_id. A bad header or
  // version deletes the file ("bad deps log signature or version; starting over"); a corrupt or
  // torn tail is truncated to the last good record ("premature end of file; recovering"). Both
  // warnings are printed here and still return kSuccess with *err empty. Missing file = kNotFound.
  LoadStatus Load(const std::string& path, State* state, std::string* err);
  // Prepares appending (recompacting first when Load found the log bloated); opened lazily, so
  // the file appears with the first record.
  bool OpenForWrite(const std::string& path, std::string* err);
  // Appends path records for new nodes and a deps record, only when different from what is
  // already recorded. Without OpenForWrite the log is kept in memory only.
  bool RecordDeps(Node* node, TimeStamp mtime, const std::vector<Node*>& nodes);
  // Closes the file (never creates it); a later RecordDeps reopens in append mode.
  void Close();
  // Closes, first creating the file (header only) if OpenForWrite was called and nothing was
  // recorded: what ninja leaves behind when a manifest regeneration restarts it.
  void CloseCreatingFile();

  Deps* GetDeps(Node* node);
  // First output whose recorded deps mention `node` (for the `target^` syntax).
  Node* GetFirstReverseDepsNode(Node* node);

  // Rewrites live entries into `path`.recompact with fresh ids and renames it over `path`.
  bool Recompact(const std::string& path, std::string* err);
  // A record is kept on recompaction only while its output still has an edge with `deps` set.
  static bool IsDepsEntryLiveFor(const Node* node);

  const std::vector<Node*>& nodes() const { return nodes_; }
  const std::vector<std::unique_ptr<Deps>>& deps() const { return deps_; }
  bool needs_recompaction() const { return needs_recompaction_; }

 private:
  bool RecordId(Node* node);
  // Stores deps for an output id; true when it replaced an earlier record.
  bool UpdateDeps(int out_id, std::unique_ptr<Deps> deps);
  bool OpenForWriteIfNeeded();
  bool WriteRecord(const std::string& record);
  bool DepsChanged(Node* node, TimeStamp mtime, const std::vector<Node*>& nodes);
  // Parses the records after the header; returns the offset just past the last good record.
  size_t ParseRecords(const std::string& contents, State* state, int* total_deps_records, int* unique_outputs);

  std::vector<Node*> nodes_;  // by record id.
  std::vector<std::unique_ptr<Deps>> deps_;  // by output id; null when none.
  FILE* file_ = nullptr;
  std::string file_path_;
  bool needs_recompaction_ = false;
};

}  // namespace headroom
