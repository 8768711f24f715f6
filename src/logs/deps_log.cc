// .ninja_deps v4 reading (with recovery from torn or corrupt tails), appending and recompaction.
// Binary layout: "# ninjadeps\n", int32 version, then size-prefixed path and deps records (native endian).
#include "headroom/logs/deps_log.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "headroom/util/disk.h"
#include "headroom/util/messages.h"

namespace headroom {
namespace {

constexpr std::string_view kSignature = "# ninjadeps\n";
constexpr size_t kHeaderSize = 16;  // signature (12 bytes) + int32 version.
constexpr uint32_t kDepsRecordFlag = 0x80000000u;  // high bit of the size field marks a deps record.
constexpr size_t kDepsRecordFixedSize = 12;  // output id, mtime low, mtime high.

uint32_t ReadU32(const char* p) {
  uint32_t value;
  memcpy(&value, p, sizeof(value));
  return value;
}

void AppendU32(std::string* out, uint32_t value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(value));
}

bool HasValidHeader(const std::string& contents) {
  if (contents.size() < kHeaderSize || contents.compare(0, kSignature.size(), kSignature) != 0) return false;
  return static_cast<int32_t>(ReadU32(contents.data() + kSignature.size())) == DepsLog::kCurrentVersion;
}

}  // namespace

DepsLog::~DepsLog() { Close(); }

LoadStatus DepsLog::Load(const std::string& path, State* state, std::string* err) {
  std::string contents;
  std::string read_err;
  switch (ReadFileContents(path, &contents, &read_err)) {
    case DiskInterface::ReadStatus::kNotFound: return LoadStatus::kNotFound;
    case DiskInterface::ReadStatus::kOtherError: *err = read_err; return LoadStatus::kError;
    case DiskInterface::ReadStatus::kOkay: break;
  }

  if (!HasValidHeader(contents)) {
    Warning("bad deps log signature or version; starting over");
    unlink(path.c_str());
    return LoadStatus::kSuccess;
  }

  int total_deps_records = 0, unique_outputs = 0;
  const size_t good_size = ParseRecords(contents, state, &total_deps_records, &unique_outputs);
  if (good_size < contents.size()) {
    // Drop the torn or corrupt tail so the next append starts on a record boundary.
    if (truncate(path.c_str(), static_cast<off_t>(good_size)) < 0) {
      *err = std::string("truncate: ") + strerror(errno);
      return LoadStatus::kError;
    }
    Warning("premature end of file; recovering");
  }
  if (total_deps_records > kMinCompactionEntryCount && total_deps_records > unique_outputs * kCompactionRatio) {
    needs_recompaction_ = true;
  }
  return LoadStatus::kSuccess;
}

size_t DepsLog::ParseRecords(const std::string& contents, State* state, int* total_deps_records, int* unique_outputs) {
  size_t offset = kHeaderSize;
  while (offset < contents.size()) {
    // Every check below rejects the record without side effects, so `offset` is the end of the good prefix.
    if (contents.size() - offset < sizeof(uint32_t)) break;
    const uint32_t size_field = ReadU32(contents.data() + offset);
    const bool is_deps = (size_field & kDepsRecordFlag) != 0;
    const uint32_t size = size_field & ~kDepsRecordFlag;
    const char* body = contents.data() + offset + sizeof(uint32_t);
    if (size > kMaxRecordSize || size % 4 != 0 || contents.size() - offset - sizeof(uint32_t) < size) break;
    const int known_ids = static_cast<int>(nodes_.size());

    if (is_deps) {
      if (size < kDepsRecordFixedSize) break;
      const int32_t out_id = static_cast<int32_t>(ReadU32(body));
      if (out_id < 0 || out_id >= known_ids) break;
      auto deps = std::make_unique<Deps>();
      deps->mtime = static_cast<TimeStamp>((static_cast<uint64_t>(ReadU32(body + 8)) << 32) | ReadU32(body + 4));
      deps->nodes.reserve((size - kDepsRecordFixedSize) / 4);  // one allocation, not one per doubling.
      bool ids_valid = true;
      for (size_t at = kDepsRecordFixedSize; at < size; at += 4) {
        const int32_t id = static_cast<int32_t>(ReadU32(body + at));
        if (id < 0 || id >= known_ids) {
          ids_valid = false;
          break;
        }
        deps->nodes.push_back(nodes_[id]);
      }
      if (!ids_valid) break;
      ++*total_deps_records;
      if (!UpdateDeps(out_id, std::move(deps))) ++*unique_outputs;
    } else {
      if (size < 8) break;  // at least one path byte (padded to 4) plus the checksum.
      size_t path_size = size - 4;
      // Up to three NULs pad the path to a multiple of four.
      for (int i = 0; i < 3 && path_size > 0 && body[path_size - 1] == '\0'; ++i) --path_size;
      if (path_size == 0) break;
      // The checksum is the bitwise NOT of the id this record defines; a mismatch means records
      // were lost or interleaved by a concurrent writer.
      if (ReadU32(body + size - 4) != ~static_cast<uint32_t>(known_ids)) break;
      Node* node = state->GetNode(std::string_view(body, path_size));
      node->deps_log_id = known_ids;
      nodes_.push_back(node);
    }
    offset += sizeof(uint32_t) + size;
  }
  return offset;
}

bool DepsLog::UpdateDeps(int out_id, std::unique_ptr<Deps> deps) {
  if (out_id >= static_cast<int>(deps_.size())) deps_.resize(out_id + 1);
  const bool replaced = deps_[out_id] != nullptr;
  deps_[out_id] = std::move(deps);
  return replaced;
}

bool DepsLog::OpenForWrite(const std::string& path, std::string* err) {
  if (needs_recompaction_ && !Recompact(path, err)) return false;
  file_path_ = path;
  return true;
}

bool DepsLog::OpenForWriteIfNeeded() {
  if (file_ || file_path_.empty()) return true;
  file_ = fopen(file_path_.c_str(), "ab");
  if (!file_) return false;
  // Unbuffered: each record goes out in one write() on an O_APPEND descriptor, so records from
  // nested ninja/headroom runs never interleave mid-record.
  setvbuf(file_, nullptr, _IONBF, 0);
  fcntl(fileno(file_), F_SETFD, FD_CLOEXEC);  // children must not inherit the log.
  if (ftell(file_) == 0) {
    std::string header(kSignature);
    AppendU32(&header, static_cast<uint32_t>(kCurrentVersion));
    if (fwrite(header.data(), 1, header.size(), file_) != header.size()) return false;
  }
  return true;
}

bool DepsLog::WriteRecord(const std::string& record) {
  if (!OpenForWriteIfNeeded()) return false;
  if (!file_) return true;  // in-memory log (no OpenForWrite).
  return fwrite(record.data(), 1, record.size(), file_) == record.size() && fflush(file_) == 0;
}

void DepsLog::Close() {
  if (file_) fclose(file_);
  file_ = nullptr;
}

void DepsLog::CloseCreatingFile() {
  OpenForWriteIfNeeded();
  Close();
}

bool DepsLog::RecordId(Node* node) {
  const size_t path_size = node->path.size();
  const size_t padding = (4 - path_size % 4) % 4;
  const size_t size = path_size + padding + 4;
  if (path_size == 0 || size > kMaxRecordSize) {
    errno = ERANGE;
    return false;
  }
  const int id = static_cast<int>(nodes_.size());
  std::string record;
  record.reserve(4 + size);
  AppendU32(&record, static_cast<uint32_t>(size));
  record.append(node->path);
  record.append(padding, '\0');
  AppendU32(&record, ~static_cast<uint32_t>(id));
  if (!WriteRecord(record)) return false;
  node->deps_log_id = id;
  nodes_.push_back(node);
  return true;
}

bool DepsLog::DepsChanged(Node* node, TimeStamp mtime, const std::vector<Node*>& nodes) {
  const Deps* existing = GetDeps(node);
  return !existing || existing->mtime != mtime || existing->nodes != nodes;
}

bool DepsLog::RecordDeps(Node* node, TimeStamp mtime, const std::vector<Node*>& nodes) {
  // New paths always mean a new deps record; otherwise only a difference does.
  bool changed = false;
  if (node->deps_log_id < 0) {
    if (!RecordId(node)) return false;
    changed = true;
  }
  for (Node* input : nodes) {
    if (input->deps_log_id < 0) {
      if (!RecordId(input)) return false;
      changed = true;
    }
  }
  if (!changed && !DepsChanged(node, mtime, nodes)) return true;

  const size_t size = kDepsRecordFixedSize + 4 * nodes.size();
  if (size > kMaxRecordSize) {
    errno = ERANGE;
    return false;
  }
  std::string record;
  record.reserve(4 + size);
  AppendU32(&record, static_cast<uint32_t>(size) | kDepsRecordFlag);
  AppendU32(&record, static_cast<uint32_t>(node->deps_log_id));
  AppendU32(&record, static_cast<uint32_t>(static_cast<uint64_t>(mtime) & 0xffffffffu));
  AppendU32(&record, static_cast<uint32_t>(static_cast<uint64_t>(mtime) >> 32));
  for (Node* input : nodes) AppendU32(&record, static_cast<uint32_t>(input->deps_log_id));
  if (!WriteRecord(record)) return false;

  auto deps = std::make_unique<Deps>();
  deps->mtime = mtime;
  deps->nodes = nodes;
  UpdateDeps(node->deps_log_id, std::move(deps));
  return true;
}

DepsLog::Deps* DepsLog::GetDeps(Node* node) {
  const int id = node->deps_log_id;
  if (id < 0 || id >= static_cast<int>(deps_.size())) return nullptr;
  return deps_[id].get();
}

Node* DepsLog::GetFirstReverseDepsNode(Node* node) {
  for (size_t id = 0; id < deps_.size(); ++id) {
    if (!deps_[id]) continue;
    const std::vector<Node*>& inputs = deps_[id]->nodes;
    if (std::find(inputs.begin(), inputs.end(), node) != inputs.end()) return nodes_[id];
  }
  return nullptr;
}

bool DepsLog::IsDepsEntryLiveFor(const Node* node) {
  // Entries of files that left the build (or whose edge dropped `deps`) are only dead weight.
  return node->in_edge && !node->in_edge->GetBinding("deps").empty();
}

bool DepsLog::Recompact(const std::string& path, std::string* err) {
  Close();
  const std::string temp_path = path + ".recompact";
  unlink(temp_path.c_str());  // a leftover from an interrupted recompaction.

  DepsLog new_log;
  if (!new_log.OpenForWrite(temp_path, err)) return false;
  // Ids are renumbered densely in the new file, so every node starts unrecorded.
  for (Node* node : nodes_) node->deps_log_id = -1;
  for (size_t old_id = 0; old_id < deps_.size(); ++old_id) {
    const Deps* deps = deps_[old_id].get();
    if (!deps || !IsDepsEntryLiveFor(nodes_[old_id])) continue;
    if (!new_log.RecordDeps(nodes_[old_id], deps->mtime, deps->nodes)) {
      *err = strerror(errno);
      return false;
    }
  }
  // The header must exist even when no entry survived.
  if (!new_log.OpenForWriteIfNeeded()) {
    *err = strerror(errno);
    return false;
  }
  new_log.Close();

  nodes_.swap(new_log.nodes_);
  deps_.swap(new_log.deps_);
  if (rename(temp_path.c_str(), path.c_str()) < 0) {
    *err = strerror(errno);
    return false;
  }
  needs_recompaction_ = false;
  return true;
}

}  // namespace headroom
