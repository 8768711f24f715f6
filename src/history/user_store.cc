// The per-user store file ($XDG_CACHE_HOME/headroom/history): its format, loading, lookups and this build's
// pending runs. It is replaced whole under a lock (user_store_write.cc: read, merge, bound, write a temp file,
// rename), so concurrent builds never lose records and readers, who take no lock, never see half a file.
//   # headroom user store v2
//   C <last used, unix s> <class key>                 a job class; its samples follow as r lines
//   E <key hex> <last used> <normalised output>       an edge (PathNormaliser::EdgeKey); its runs follow
//   r <peak bytes> <duration ms> <method> <outcome> <rise curve>   oldest first (v1: no rise curve)
// Fields are tab-separated; keys and outputs are last and escape \ TAB and newline.
#include "headroom/history/user_store.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <optional>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

#include <fmt/format.h>

#include "headroom/history/history_text.h"
#include "headroom/util/disk.h"
#include "headroom/util/replace_file.h"

namespace headroom {
namespace {

using namespace history_text;

// Lines that begin an edge entry ("E\t..."), counted in one pass over the raw bytes (then rewound), so that the index
// is sized once: grown by doubling, its last copy (16 B an edge, stores up to 8 MiB) was a build's heap peak.
size_t CountEdgeEntries(std::FILE* file) {
  char buffer[4096];
  size_t count = 0;
  bool at_line_start = true;
  size_t got;
  while ((got = std::fread(buffer, 1, sizeof buffer, file)) > 0) {
    if (at_line_start && buffer[0] == 'E') ++count;
    for (const char* newline = static_cast<const char*>(std::memchr(buffer, '\n', got)); newline;) {
      const size_t next = static_cast<size_t>(newline - buffer) + 1;
      if (next < got && buffer[next] == 'E') ++count;
      newline = next < got ? static_cast<const char*>(std::memchr(buffer + next, '\n', got - next)) : nullptr;
    }
    at_line_start = buffer[got - 1] == '\n';
  }
  std::rewind(file);  // clears the error and end-of-file flags; a read error shows again in the real read
  return count;
}

constexpr std::string_view kStoreMagic = "# headroom user store v";
// An export's temp file whose writer looks dead and that is this old is a crash's leftover (a pid from another
// pid namespace may look dead here, but no export takes minutes).
constexpr int64_t kStaleExportTempAgeS = 600;

std::string RecordLine(const HistoryRecord& r) {
  return fmt::format("r\t{}\t{}\t{}\t{}\t{}\n", r.peak_bytes, r.duration_ms, static_cast<char>(r.method),
                     static_cast<char>(r.outcome), r.rise.Format());
}

void AddSample(std::vector<HistoryRecord>* samples, const HistoryRecord& record) {
  samples->push_back(record);
  if (samples->size() > UserStore::kSamplesPerClass) samples->erase(samples->begin());
}

}  // namespace

std::string Absolute(std::string dir) {
  if (dir.empty() || dir[0] == '/') return dir;
  char cwd[4096];
  return getcwd(cwd, sizeof cwd) ? std::string(cwd) + "/" + dir : dir;
}

// $XDG_CACHE_HOME/headroom, else ~/.cache/headroom; "" without a home.
std::string DefaultUserStoreDir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && xdg[0] == '/') return std::string(xdg) + "/headroom";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/headroom";
  return "";
}

std::string ResolveUserStoreDir(const char* flag_dir, bool disabled_by_flag) {
  if (disabled_by_flag) return "";
  if (flag_dir && *flag_dir) return Absolute(flag_dir);
  if (const char* env = std::getenv("HEADROOM_STORE"); env && *env) {
    return std::strcmp(env, "off") == 0 || std::strcmp(env, "0") == 0 ? "" : Absolute(env);
  }
  return DefaultUserStoreDir();
}

UserStore::UserStore(std::string dir, PathNormaliser normaliser, UserStoreLimits limits)
    : dir_(std::move(dir)), normaliser_(std::move(normaliser)), limits_(limits) {}

std::string UserStore::Warn(std::string message) {
  if (warned_) return "";
  warned_ = true;
  return message;
}

std::string UserStore::Parse(std::string_view text, const std::string& name, Contents* contents) {
  StoreEntryReader reader(text, name);
  reader.set_caps(kSamplesPerClass, kRunsPerEdge);
  const std::string problem = reader.ReadHeader(&contents->version);
  if (!problem.empty() || contents->version > kVersion) return problem;
  // An edge takes at least two lines of about 40 bytes: sizing the table once spares the rehashes that
  // dominated loading a large store.
  contents->edges.reserve(contents->edges.size() + text.size() / 96);
  StoreEntry entry;
  while (reader.Next(&entry)) {
    if (entry.kind == 'C') {
      StoredClass& stored = contents->classes[entry.class_key];
      stored.last_used_s = std::max(stored.last_used_s, entry.last_used_s);
      stored.samples = std::move(entry.records);
      continue;
    }
    StoredEdge& stored = contents->edges[entry.key];
    stored.output = std::move(entry.output);
    stored.last_used_s = std::max(stored.last_used_s, entry.last_used_s);
    stored.history.command_hash = entry.key;
    stored.history.recent.clear();
    for (const HistoryRecord& record : entry.records) stored.history.recent.Add(record);
  }
  return reader.damage();
}

std::string UserStore::Serialise(const Contents& contents, const UserStoreLimits& limits, int64_t now_s) {
  // Each entry as its own chunk, so the bound drops whole entries, least recently used first.
  std::vector<std::pair<int64_t, std::string>> chunks;
  const int64_t oldest = now_s - limits.max_age_s;
  for (const auto& [key, stored] : contents.classes) {
    if (stored.last_used_s < oldest || stored.samples.empty()) continue;
    std::string chunk = fmt::format("C\t{}\t{}\n", stored.last_used_s, Escape(key));
    for (const HistoryRecord& record : stored.samples) chunk += RecordLine(record);
    chunks.emplace_back(stored.last_used_s, std::move(chunk));
  }
  for (const auto& [key, stored] : contents.edges) {
    if (stored.last_used_s < oldest || stored.history.recent.empty()) continue;
    std::string chunk = fmt::format("E\t{:016x}\t{}\t{}\n", key, stored.last_used_s, Escape(stored.output));
    for (const HistoryRecord& record : stored.history.recent) chunk += RecordLine(record);
    chunks.emplace_back(stored.last_used_s, std::move(chunk));
  }
  std::sort(chunks.begin(), chunks.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::string text = fmt::format("{}{}\n", kStoreMagic, kVersion);
  for (const auto& [last_used, chunk] : chunks) {
    if (text.size() + chunk.size() > limits.max_bytes) continue;  // a smaller, older one may still fit
    text += chunk;
  }
  return text;
}

std::string UserStore::Load() {
  if (dir_.empty()) return "";
  struct stat st;
  if (stat(dir_.c_str(), &st) != 0) {
    // Nothing to read yet. The default location is a convenience: where it cannot even be created
    // (HOME=/nonexistent in package builds) the build stays as quiet as ninja; a store the user named warns.
    quiet_if_uncreatable_ = dir_ == DefaultUserStoreDir();
    return "";
  }
  if (access(dir_.c_str(), W_OK) != 0) read_only_ = true;
  std::string contents, error;
  const std::string path = file_path();
  const DiskInterface::ReadStatus read = ReadFileContents(path, &contents, &error);
  if (read == DiskInterface::ReadStatus::kOtherError) {
    read_only_ = true;  // never replace what could not be read: it may hold other builds' records
    return Warn(fmt::format("cannot read the headroom store {}: {}; building without it", path, error));
  }
  if (read == DiskInterface::ReadStatus::kNotFound || contents.empty()) {
    return read_only_ ? Warn(fmt::format("the headroom store {} is read-only; this build's figures are not kept "
                                         "there", dir_))
                      : "";
  }
  std::string damage = Parse(contents, path, &contents_);
  if (contents_.version > kVersion) {
    const int version = contents_.version;
    read_only_ = true;
    contents_ = Contents{};
    return Warn(fmt::format("the headroom store {} was written by a newer headroom (format v{}); left untouched "
                            "and not used",
                            path, version));
  }
  if (!damage.empty()) {
    return Warn(fmt::format("{}; keeping the {} entries before the damage{}", damage,
                            contents_.edges.size() + contents_.classes.size(),
                            read_only_ ? "" : " and rewriting it at the end of the build"));
  }
  if (read_only_) {
    return Warn(fmt::format("the headroom store {} is read-only; its figures are used, this build's are not kept",
                            dir_));
  }
  return "";
}

void UserStore::LoadLazily(HistoryStore* seed_target, std::function<void(const std::string&)> warn) {
  lazy_ = true;
  seed_target_ = seed_target;
  warn_ = std::move(warn);
}

void UserStore::LoadNow() {
  loaded_ = true;
  std::string warning = LoadIndex();
  if (!warning.empty() && warn_) warn_(warning);
  if (!seed_target_) return;
  SeedClasses(seed_target_);
  // The history holds them now; the merge reads the file again. A store's classes hold up to 64 samples and
  // a long key each: thousands of them would otherwise stay for the whole build.
  Contents().classes.swap(contents_.classes);
}

// Load for a build: the classes are read, each edge's entry is only indexed; the file stays open for FindEdge.
std::string UserStore::LoadIndex() {
  indexed_ = true;
  if (dir_.empty()) return "";
  struct stat st;
  if (stat(dir_.c_str(), &st) != 0) {
    quiet_if_uncreatable_ = dir_ == DefaultUserStoreDir();  // as Load
    return "";
  }
  if (access(dir_.c_str(), W_OK) != 0) read_only_ = true;
  const std::string path = file_path();
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  const int open_errno = errno;
  if (!file && open_errno != ENOENT) {
    read_only_ = true;  // never replace what could not be read: it may hold other builds' records
    return Warn(fmt::format("cannot read the headroom store {}: {}; building without it", path,
                            std::strerror(open_errno)));
  }
  if (!file || (fstat(fileno(file.get()), &st) == 0 && st.st_size == 0)) {
    return read_only_ ? Warn(fmt::format("the headroom store {} is read-only; this build's figures are not kept "
                                         "there", dir_))
                      : "";
  }
  index_.reserve(CountEdgeEntries(file.get()));
  StoreEntryReader reader(file.get(), path);
  reader.set_caps(kSamplesPerClass, kRunsPerEdge);
  int version = kVersion;
  std::string damage = reader.ReadHeader(&version);
  contents_.version = version;  // FindEdge reads entries cut out of this file in its format
  if (damage.empty() && version > kVersion) {
    read_only_ = true;
    return Warn(fmt::format("the headroom store {} was written by a newer headroom (format v{}); left untouched "
                            "and not used",
                            path, version));
  }
  StoreEntry entry;
  while (damage.empty() && reader.Next(&entry)) {
    if (entry.kind == 'C') {
      StoredClass& stored = contents_.classes[entry.class_key];
      stored.last_used_s = std::max(stored.last_used_s, entry.last_used_s);
      stored.samples = std::move(entry.records);
    } else if (entry.offset + entry.length <= UINT32_MAX) {  // the size bound keeps files far below 4 GiB
      index_.push_back(IndexEntry{entry.key, static_cast<uint32_t>(entry.offset),
                                  static_cast<uint32_t>(entry.length)});
    }
  }
  if (damage.empty()) damage = reader.damage();
  if (std::ferror(file.get())) {
    const int read_errno = errno;
    read_only_ = true;
    ForgetLoaded();
    return Warn(fmt::format("cannot read the headroom store {}: {}; building without it", path,
                            std::strerror(read_errno)));
  }
  // By key; of an edge written twice (a hand-edited file) the last entry counts, as a full load reads it.
  std::sort(index_.begin(), index_.end(), [](const IndexEntry& a, const IndexEntry& b) {
    return a.key != b.key ? a.key < b.key : a.offset < b.offset;
  });
  auto last_of_each = std::unique(index_.rbegin(), index_.rend(),
                                  [](const IndexEntry& a, const IndexEntry& b) { return a.key == b.key; });
  index_.erase(index_.begin(), last_of_each.base());
  index_.shrink_to_fit();
  file_ = std::move(file);
  if (!damage.empty()) {
    return Warn(fmt::format("{}; keeping the {} entries before the damage{}", damage,
                            index_.size() + contents_.classes.size(),
                            read_only_ ? "" : " and rewriting it at the end of the build"));
  }
  if (read_only_) {
    return Warn(fmt::format("the headroom store {} is read-only; its figures are used, this build's are not kept",
                            dir_));
  }
  return "";
}

void UserStore::ForgetLoaded() {
  std::vector<IndexEntry>().swap(index_);
  file_.reset();
  Contents().edges.swap(contents_.edges);
  Contents().classes.swap(contents_.classes);
}

uint64_t UserStore::EdgeKey(std::string_view output, std::string_view class_key) const {
  return normaliser_.EdgeKey(output, class_key);
}

const EdgeHistory* UserStore::FindEdge(uint64_t key) const {
  if (!indexed_) {
    auto found = contents_.edges.find(key);
    return found == contents_.edges.end() || found->second.history.recent.empty() ? nullptr
                                                                                   : &found->second.history;
  }
  auto it = std::lower_bound(index_.begin(), index_.end(), key,
                             [](const IndexEntry& entry, uint64_t wanted) { return entry.key < wanted; });
  if (it == index_.end() || it->key != key || !file_) return nullptr;
  // The entry's own bytes, from the file as it was loaded (a newer one renamed over it leaves this one open).
  found_text_.resize(it->length);
  if (pread(fileno(file_.get()), found_text_.data(), it->length, it->offset) != static_cast<ssize_t>(it->length)) {
    return nullptr;
  }
  StoreEntryReader reader(found_text_, file_path(), /*has_header=*/false);
  reader.set_caps(kSamplesPerClass, kRunsPerEdge);
  reader.set_version(contents_.version);
  if (!reader.Next(&found_entry_) || found_entry_.kind != 'E' || found_entry_.records.empty()) return nullptr;
  found_.command_hash = key;
  found_.recent.clear();
  for (const HistoryRecord& record : found_entry_.records) found_.recent.Add(record);
  return &found_;
}

size_t UserStore::SeedClasses(HistoryStore* history) const {
  std::vector<const std::string*> keys;
  for (const auto& [key, stored] : contents_.classes) keys.push_back(&key);
  std::sort(keys.begin(), keys.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
  size_t seeded = 0;
  for (const std::string* key : keys) {
    const ClassStats* own = history->FindClass(*key);
    if (own && (own->completed() > 0 || own->killed() > 0)) continue;  // the build dir's own figures win
    for (const HistoryRecord& record : contents_.classes.at(*key).samples) history->AddClassSample(*key, record);
    ++seeded;
  }
  return seeded;
}

void UserStore::Record(std::string_view output, std::string_view class_key, const HistoryRecord& record,
                       int64_t now_s) {
  if (dir_.empty() || read_only_) return;
  const uint64_t key = EdgeKey(output, class_key);
  // An edge the file has is named there: its output need not be kept (one the merge then finds gone from the
  // file, evicted by another build meanwhile, is written with no name; the name is only for people).
  const bool named_in_file = indexed_ && std::binary_search(index_.begin(), index_.end(), IndexEntry{key, 0, 0},
                                                            [](const IndexEntry& a, const IndexEntry& b) {
                                                              return a.key < b.key;
                                                            });
  if (named_in_file) {
    AddPending(key, nullptr, class_key, record, now_s);
  } else {
    const std::string normalised = normaliser_.Output(output);
    AddPending(key, &normalised, class_key, record, now_s);
  }
  if (pending_.size() >= next_early_flush_at_ && now_s - pending_.front().time_s >= kEarlyFlushAgeS) FlushEarly(now_s);
}

void UserStore::AddPending(uint64_t key, const std::string* output, std::string_view class_key,
                           const HistoryRecord& record, int64_t time_s) {
  auto [it, inserted] = pending_class_index_.try_emplace(std::string(class_key),
                                                         static_cast<uint32_t>(pending_class_keys_.size()));
  if (inserted) pending_class_keys_.emplace_back(class_key);
  uint32_t output_offset = Pending::kNoOutput;
  if (output && pending_outputs_.size() + output->size() < Pending::kNoOutput) {
    output_offset = static_cast<uint32_t>(pending_outputs_.size());
    pending_outputs_ += *output;
    pending_outputs_ += '\0';
  }
  pending_.push_back(Pending{key, record, time_s, it->second, output_offset});
}

std::string_view UserStore::PendingOutput(const Pending& pending) const {
  if (pending.output_offset == Pending::kNoOutput) return {};
  return std::string_view(pending_outputs_.c_str() + pending.output_offset);
}

void UserStore::AddBuildHistory(const HistoryStore& history, int64_t now_s) {
  for (const auto& [output, edge] : history.edges()) {
    const std::string& class_key = history.ClassById(edge.class_id).key();
    const std::string normalised = normaliser_.Output(output);
    for (const HistoryRecord& record : edge.recent) {
      AddPending(EdgeKey(output, class_key), &normalised, class_key, record, now_s);
    }
  }
}

void UserStore::Apply(const Pending& pending, Contents* contents) const {
  const std::string& class_key = pending_class_keys_[pending.class_index];
  StoredEdge& edge = contents->edges[pending.key];
  if (edge.history.recent.empty()) edge.output = PendingOutput(pending);
  edge.history.command_hash = pending.key;
  edge.history.recent.Add(pending.record);
  edge.last_used_s = std::max(edge.last_used_s, pending.time_s);
  StoredClass& stored = contents->classes[class_key];
  AddSample(&stored.samples, pending.record);
  stored.last_used_s = std::max(stored.last_used_s, pending.time_s);
}

void UserStore::ForgetPending() {
  std::deque<Pending>().swap(pending_);
  std::string().swap(pending_outputs_);
  std::vector<std::string>().swap(pending_class_keys_);
  std::unordered_map<std::string, uint32_t>().swap(pending_class_index_);
}

bool UserStore::ExportTo(const std::string& path, std::string* error) const {
  Contents copy;
  const int64_t now_s = static_cast<int64_t>(time(nullptr));
  UserStoreLimits unbounded_age = limits_;
  unbounded_age.max_age_s = INT64_MAX / 2;
  Parse(Serialise(contents_, unbounded_age, now_s), path, &copy);
  for (const Pending& one : pending_) Apply(one, &copy);
  RemoveStaleTempFiles(path, kStaleExportTempAgeS);  // an export killed mid-write; nothing locks exports
  return ReplaceFileContents(path, Serialise(copy, limits_, now_s), 0666, error);
}

bool UserStore::ImportFrom(const std::string& path, int64_t now_s, std::string* error) {
  std::string text;
  const DiskInterface::ReadStatus read = ReadFileContents(path, &text, error);
  if (read != DiskInterface::ReadStatus::kOkay) {
    if (read == DiskInterface::ReadStatus::kNotFound) *error = fmt::format("{}: No such file or directory", path);
    return false;
  }
  Contents imported;
  std::string damage = Parse(text, path, &imported);
  if (imported.version > kVersion) {
    *error = fmt::format("{} was written by a newer headroom (format v{})", path, imported.version);
    return false;
  }
  if (!damage.empty()) {
    *error = damage;
    return false;
  }
  if (dir_.empty()) {
    *error = "the headroom store is disabled (--no-store or HEADROOM_STORE=off)";
    return false;
  }
  const bool written = WriteMerged(&imported, now_s, FinalWrite(), error);
  ForgetPending();
  return written;
}

}  // namespace headroom
