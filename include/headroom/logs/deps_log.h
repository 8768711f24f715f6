// .ninja_deps v4: binary, append-only record of each output's discovered dependencies.
#pragma once

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

  struct Deps {
    TimeStamp mtime = 0;  // output mtime recorded after the command ran.
    std::vector<Node*> nodes;
  };

  DepsLog() = default;
  ~DepsLog();

  // Loads records, interning paths into `state`. A bad header deletes the file with a warning;
  // a corrupt tail is truncated to the last good record with a warning.
  LoadStatus Load(const std::string& path, State* state, std::string* err);
  bool OpenForWrite(const std::string& path, std::string* err);
  // Appends (only when different from what is already recorded).
  bool RecordDeps(Node* node, TimeStamp mtime, const std::vector<Node*>& nodes);
  void Close();

  Deps* GetDeps(Node* node);
  // First output whose recorded deps mention `node` (for the `target^` syntax).
  Node* GetFirstReverseDepsNode(Node* node);

  bool Recompact(const std::string& path, std::string* err);
  // A record is kept on recompaction only while its output still has an edge with `deps` set.
  static bool IsDepsEntryLiveFor(const Node* node);

  const std::vector<Node*>& nodes() const { return nodes_; }
  const std::vector<std::unique_ptr<Deps>>& deps() const { return deps_; }
  bool needs_recompaction() const { return needs_recompaction_; }

 private:
  bool RecordId(Node* node);
  bool UpdateDeps(int out_id, std::unique_ptr<Deps> deps);
  bool OpenForWriteIfNeeded();

  std::vector<Node*> nodes_;  // by record id.
  std::vector<std::unique_ptr<Deps>> deps_;  // by output id; null when none.
  FILE* file_ = nullptr;
  std::string file_path_;
  bool needs_recompaction_ = false;
};

}  // namespace headroom
