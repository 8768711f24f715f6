// --content-hash: clean-by-content decisions during the scan, records after each successful edge, and the
// touch/log/deps updates that make ninja 1.13.2 agree afterwards.
#include "headroom/scan/content_hashes.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <unordered_set>

#include "headroom/logs/build_log.h"
#include "headroom/logs/deps_log.h"
#include "headroom/logs/depfile_parser.h"
#include "headroom/util/disk.h"
#include "headroom/util/path.h"

namespace headroom {
namespace {

constexpr int64_t kNanosPerSecond = 1000000000;

// Sets the file's mtime to now, or to `at_least` when the clock says earlier (a source from a machine
// whose clock runs ahead). Returns the mtime it then has, or -1.
TimeStamp TouchAtLeast(const DiskInterface& disk, const std::string& path, TimeStamp at_least) {
  const timespec now[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
  if (utimensat(AT_FDCWD, path.c_str(), now, 0) != 0) return -1;
  std::string err;
  TimeStamp mtime = disk.Stat(path, &err);
  if (mtime <= 0 || mtime >= at_least) return mtime <= 0 ? -1 : mtime;
  const timespec exact[2] = {{0, UTIME_OMIT}, {at_least / kNanosPerSecond, at_least % kNanosPerSecond}};
  if (utimensat(AT_FDCWD, path.c_str(), exact, 0) != 0) return -1;
  mtime = disk.Stat(path, &err);
  return mtime >= at_least ? mtime : -1;
}

}  // namespace

void ContentHashes::Load(const std::string& path, std::string* warning) {
  path_ = path;
  log_.Load(path, warning);
}

bool ContentHashes::Save(std::string* err) {
  if (dry_run_ || path_.empty() || !log_.changed()) return true;
  log_.EraseUnless([this](const std::string& key) {
    const Node* node = state_->LookupNode(key);
    return node && node->in_edge && !node->in_edge->is_phony();
  });
  return log_.Save(path_, err);
}

std::vector<Node*> ContentHashes::ContentInputs(const Edge* edge, const std::vector<Node*>& extra) const {
  std::vector<Node*> inputs;
  std::unordered_set<const Node*> seen;
  // A phony input stands for its own inputs: its "mtime" is theirs, and it has no content of its own.
  std::vector<const Edge*> pending{edge};
  while (!pending.empty()) {
    const Edge* current = pending.back();
    pending.pop_back();
    const size_t count = current->inputs.size() - current->order_only_deps;
    for (size_t i = 0; i < count; ++i) {
      Node* input = current->inputs[i];
      if (!seen.insert(input).second) continue;
      if (input->in_edge && input->in_edge->is_phony() && !input->in_edge->inputs.empty())
        pending.push_back(input->in_edge);
      else
        inputs.push_back(input);
    }
  }
  for (Node* node : extra) {
    if (seen.insert(node).second) inputs.push_back(node);
  }
  return inputs;
}

std::optional<uint64_t> ContentHashes::HashFile(const std::string& path, TimeStamp* mtime) {
  std::string err;
  const TimeStamp before = disk_->Stat(path, &err);
  if (before <= 0) return std::nullopt;
  auto cached = hashed_.find(path);
  if (cached != hashed_.end() && cached->second.mtime == before) {
    *mtime = before;
    return cached->second.hash;
  }
  std::string contents;
  if (disk_->ReadFile(path, &contents, &err) != DiskInterface::ReadStatus::kOkay) return std::nullopt;
  // Written to while read: the hash may mix two versions.
  if (disk_->Stat(path, &err) != before) return std::nullopt;
  const uint64_t hash = HashLog::HashContents(contents);
  hashed_[path] = CachedHash{before, hash};
  *mtime = before;
  return hash;
}

bool ContentHashes::BuildRecord(const std::vector<Node*>& inputs, const Edge* edge, TimeStamp inputs_bound,
                                HashRecord* record) {
  TimeStamp mtime = 0;
  for (const Node* input : inputs) {
    std::optional<uint64_t> hash = HashFile(input->path, &mtime);
    if (!hash || mtime > inputs_bound) return false;
    record->inputs.push_back(HashedFile{log_.InternPath(input->path), *hash});
  }
  for (const Node* output : edge->outputs) {
    std::optional<uint64_t> hash = HashFile(output->path, &mtime);
    if (!hash) return false;
    record->outputs.push_back(HashedFile{log_.InternPath(output->path), *hash});
  }
  return true;
}

bool ContentHashes::RecordMatches(const HashRecord& record, const std::vector<Node*>& inputs, const Edge* edge,
                                  bool compare_hashes) {
  if (record.outputs.size() != edge->outputs.size()) return false;
  std::unordered_map<uint32_t, uint64_t> recorded;
  for (const HashedFile& file : record.inputs) recorded.emplace(file.path_id, file.hash);
  // The same set of files: a file the edge reads now that it did not then (or the reverse) is a change.
  if (recorded.size() != inputs.size()) return false;
  TimeStamp mtime = 0;
  for (const Node* input : inputs) {
    const int64_t id = log_.FindPath(input->path);
    auto it = id < 0 ? recorded.end() : recorded.find(static_cast<uint32_t>(id));
    if (it == recorded.end()) return false;
    if (!compare_hashes) continue;
    std::optional<uint64_t> hash = HashFile(input->path, &mtime);
    if (!hash || *hash != it->second) return false;
  }
  for (size_t i = 0; i < edge->outputs.size(); ++i) {
    if (log_.path(record.outputs[i].path_id) != edge->outputs[i]->path) return false;
    if (!compare_hashes) continue;
    std::optional<uint64_t> hash = HashFile(edge->outputs[i]->path, &mtime);
    if (!hash || *hash != record.outputs[i].hash) return false;
  }
  return true;
}

bool ContentHashes::LogAgreesApartFromTimes(const Edge* edge) const {
  if (!build_log_) return false;
  const bool generator = edge->GetBindingBool("generator");
  const std::string command = edge->EvaluateCommand(/*incl_rsp_file=*/true);
  for (const Node* output : edge->outputs) {
    if (!output->exists()) return false;
    const BuildLogEntry* entry = build_log_->LookupByOutput(output->path);
    if (!entry && !generator) return false;
    if (entry && !generator && build_log_->HashCommand(command) != entry->command_hash) return false;
  }
  return true;
}

bool ContentHashes::ReconcileUnchanged(Edge* edge, const Node* most_recent_input) {
  // Without an input only a missing output, a missing log entry or a new command can make an edge dirty.
  if (edge->is_phony() || !most_recent_input || edge->outputs.empty()) return false;
  const HashRecord* record = log_.Find(edge->outputs[0]->path);
  if (!record || !LogAgreesApartFromTimes(edge)) return false;
  if (!RecordMatches(*record, ContentInputs(edge, {}), edge, /*compare_hashes=*/true)) return false;
  return MakeTimesAgree(edge, most_recent_input->mtime);
}

bool ContentHashes::MakeTimesAgree(Edge* edge, TimeStamp newest_input) {
  // ninja compares each output's mtime and its log entry's mtime with the newest input, and finds deps
  // records stale when older than their output: all three move up to (at least) the newest input.
  TimeStamp log_mtime = newest_input;
  const bool restat = edge->GetBindingBool("restat");
  for (Node* output : edge->outputs) {
    // A logged restat output is judged by its log entry alone; its file keeps its time, and its dependents theirs.
    const bool judged_by_log = restat && build_log_ && build_log_->LookupByOutput(output->path);
    if (output->mtime < newest_input && !judged_by_log) {
      const TimeStamp touched = dry_run_ ? newest_input : TouchAtLeast(*disk_, output->path, newest_input);
      if (touched < 0) return false;
      output->SetMtimeFromStat(touched);
      hashed_.erase(output->path);
    }
    log_mtime = std::max(log_mtime, output->mtime);
  }
  if (dry_run_) return true;

  const BuildLogEntry* stale = nullptr;
  for (const Node* output : edge->outputs) {
    const BuildLogEntry* entry = build_log_->LookupByOutput(output->path);
    if (entry && entry->mtime < newest_input) stale = entry;
  }
  if (stale && !build_log_->RecordCommand(edge, stale->start_time, stale->end_time, log_mtime)) return false;

  if (deps_log_ && !edge->GetBinding("deps").empty()) {
    for (Node* output : edge->outputs) {
      const DepsLog::Deps* deps = deps_log_->GetDeps(output);
      if (!deps || deps->mtime >= output->mtime) continue;
      const std::vector<Node*> nodes = deps->nodes;  // RecordDeps replaces the record it came from
      if (!deps_log_->RecordDeps(output, output->mtime, nodes)) return false;
    }
  }
  return true;
}

void ContentHashes::AdoptClean(Edge* edge) {
  if (dry_run_ || edge->is_phony() || edge->outputs.empty()) return;
  const std::vector<Node*> inputs = ContentInputs(edge, {});
  const HashRecord* record = log_.Find(edge->outputs[0]->path);
  if (record && RecordMatches(*record, inputs, edge, /*compare_hashes=*/false)) return;
  HashRecord fresh;
  // Clean means ninja holds every input older than the outputs: no bound beyond that.
  if (BuildRecord(inputs, edge, INT64_MAX, &fresh))
    log_.Set(edge->outputs[0]->path, std::move(fresh));
  else
    log_.Erase(edge->outputs[0]->path);
}

bool ContentHashes::DepfileInputs(const Edge* edge, std::vector<Node*>* nodes) {
  if (!edge->GetBinding("deps").empty()) return true;
  const std::string depfile = edge->GetUnescapedDepfile();
  if (depfile.empty()) return true;
  std::string content, err;
  if (disk_->ReadFile(depfile, &content, &err) != DiskInterface::ReadStatus::kOkay) return false;
  DepfileParser parser;
  if (!parser.Parse(&content, &err)) return false;
  for (std::string_view in : parser.ins) {
    std::string path(in);
    if (!CanonicalizePath(&path, &err)) continue;
    nodes->push_back(state_->GetNode(path));
  }
  return true;
}

void ContentHashes::RecordBuilt(Edge* edge, const std::vector<Node*>& discovered, TimeStamp inputs_bound) {
  if (dry_run_ || edge->is_phony() || edge->outputs.empty()) return;
  const std::string& key = edge->outputs[0]->path;
  std::vector<Node*> extra = discovered;
  HashRecord record;
  if (inputs_bound <= 0 || !DepfileInputs(edge, &extra) ||
      !BuildRecord(ContentInputs(edge, extra), edge, inputs_bound, &record)) {
    log_.Erase(key);
    return;
  }
  log_.Set(key, std::move(record));
}

}  // namespace headroom
