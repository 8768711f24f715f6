// --content-hash: an edge whose inputs' mtimes moved but whose inputs and outputs still hold what they held
// when it last succeeded is clean; its outputs, .ninja_log and .ninja_deps are then brought forward in time
// so that ninja itself agrees. Records are kept in .headroom_hashes (logs/hash_log.h).
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "headroom/graph/graph.h"
#include "headroom/logs/hash_log.h"

namespace headroom {

class BuildLog;
class DepsLog;
class DiskInterface;

class ContentHashes {
 public:
  // dry_run: decide, but touch no file and write no log.
  ContentHashes(State* state, DiskInterface* disk, BuildLog* build_log, DepsLog* deps_log, bool dry_run)
      : state_(state), disk_(disk), build_log_(build_log), deps_log_(deps_log), dry_run_(dry_run) {}

  // Reads the records at `path`; an unusable file starts over with *warning set.
  void Load(const std::string& path, std::string* warning);
  // Writes them back when anything changed (never in a dry run), dropping edges the manifest lost.
  bool Save(std::string* err);

  // For an edge that the mtimes (its outputs' or the log's) alone call dirty: when every input and output
  // still has the content recorded and the command is the one logged, makes the outputs, the log and the
  // deps log agree that it is clean and returns true. false leaves it dirty (as does a touch or log write
  // that fails: the edge then runs, as it would without the option).
  bool ReconcileUnchanged(Edge* edge, const Node* most_recent_input);
  // For an edge found clean: records its contents if they were never recorded (a build dir that ninja or
  // headroom without --content-hash built), since what ninja calls clean is what a record asserts.
  void AdoptClean(Edge* edge);
  // After an edge succeeded: records what it read and wrote. `discovered` are the deps its command reported;
  // inputs modified after `inputs_bound` (the command's start) make the record unusable, so none is kept.
  void RecordBuilt(Edge* edge, const std::vector<Node*>& discovered, TimeStamp inputs_bound);

  const HashLog& log() const { return log_; }

 private:
  // The files an edge's content depends on: its inputs but order-only, phony inputs replaced by theirs.
  std::vector<Node*> ContentInputs(const Edge* edge, const std::vector<Node*>& extra) const;
  // The content hash of `path`, with its mtime; nullopt when it is missing, unreadable or changed while read.
  std::optional<uint64_t> HashFile(const std::string& path, TimeStamp* mtime);
  bool BuildRecord(const std::vector<Node*>& inputs, const Edge* edge, TimeStamp inputs_bound, HashRecord* record);
  bool RecordMatches(const HashRecord& record, const std::vector<Node*>& inputs, const Edge* edge, bool compare_hashes);
  bool LogAgreesApartFromTimes(const Edge* edge) const;
  bool MakeTimesAgree(Edge* edge, TimeStamp newest_input);
  // Paths the edge's depfile names now (edges with a depfile but no `deps`); false when unreadable.
  bool DepfileInputs(const Edge* edge, std::vector<Node*>* nodes);

  struct CachedHash {
    TimeStamp mtime;
    uint64_t hash;
  };

  State* state_;
  DiskInterface* disk_;
  BuildLog* build_log_;
  DepsLog* deps_log_;
  bool dry_run_;
  std::string path_;
  HashLog log_;
  std::unordered_map<std::string, CachedHash> hashed_;  // this run's hashes, valid while the mtime is the same
};

}  // namespace headroom
