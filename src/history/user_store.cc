// The per-user store file ($XDG_CACHE_HOME/headroom/history): a small versioned text file, replaced whole
// under a lock (read, merge, bound, write a temp file, rename), so concurrent builds never lose records and
// readers, who take no lock, never see half a file.
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

constexpr std::string_view kMagic = "# headroom user store v";
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

// The store holds command classes with their -D values: only its owner may read it. A store made by an
// older headroom (0755/0644) is narrowed, but only when it belongs to this user: a store someone shares on
// purpose, owned by another user, is left as it is.
void MakePrivate(int fd, const struct stat& st, mode_t private_mode) {
  if (st.st_uid == geteuid() && (st.st_mode & 077) != 0) fchmod(fd, private_mode);
}

void MakeDirPrivate(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st;
  if (fstat(fd, &st) == 0) MakePrivate(fd, st, 0700);
  close(fd);
}

// Holds the store's lock file exclusively. Polls rather than blocks, so a build stopped while holding it
// (SIGSTOP, a debugger) costs another build lock_wait_ms, not its end.
class StoreLock {
 public:
  StoreLock(const std::string& path, int wait_ms, std::string* error) {
    fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd_ < 0) {
      *error = fmt::format("cannot open {}: {}", path, std::strerror(errno));
      return;
    }
    struct stat st;
    if (fstat(fd_, &st) == 0) MakePrivate(fd_, st, 0600);
    std::string why;
    lock_.emplace(fd_, wait_ms, &why);
    if (!lock_->locked()) *error = fmt::format("{}: {}", path, why);
  }
  ~StoreLock() {
    lock_.reset();
    if (fd_ >= 0) close(fd_);
  }
  bool locked() const { return lock_ && lock_->locked(); }

 private:
  int fd_ = -1;
  std::optional<PolledFileLock> lock_;
};

// Creates `dir` (0700) and the directories above it that are missing (0755, like mkdir -p: they hold nothing
// of the store's), and makes `dir` private.
bool MakeDirs(const std::string& dir, std::string* error) {
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    std::string prefix = dir.substr(0, slash);
    const mode_t mode = slash == std::string::npos ? 0700 : 0755;
    if (!prefix.empty() && mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) {
      *error = fmt::format("cannot create {}: {}", prefix, std::strerror(errno));
      return false;
    }
    if (slash == std::string::npos) {
      MakeDirPrivate(dir);
      return true;
    }
  }
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
  std::string text = fmt::format("{}{}\n", kMagic, kVersion);
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

// One merge of the file with this build's runs (and an imported file's entries), walked more than once over
// the same inputs: for the total size, for each entry's size when over the bound, then to write the kept.
// Only the runs of this build are in memory, with two sort orders of them; the file is streamed.
class UserStore::Merge {
 public:
  Merge(const UserStore& store, const Contents* extra, int64_t now_s)
      : store_(store), extra_(extra), oldest_(now_s - store.limits_.max_age_s) {
    const std::deque<Pending>& pending = store.pending_;
    by_key_.resize(pending.size());
    for (uint32_t i = 0; i < by_key_.size(); ++i) by_key_[i] = i;
    std::sort(by_key_.begin(), by_key_.end(), [&](uint32_t a, uint32_t b) {
      return pending[a].key != pending[b].key ? pending[a].key < pending[b].key : a < b;
    });
    // By class, in the order they ran: a counting sort, with where each class's runs start.
    class_start_.assign(store.pending_class_keys_.size() + 1, 0);
    for (const Pending& one : pending) ++class_start_[one.class_index + 1];
    for (size_t c = 1; c < class_start_.size(); ++c) class_start_[c] += class_start_[c - 1];
    by_class_.resize(pending.size());
    std::vector<uint32_t> next(class_start_.begin(), class_start_.end() - 1);
    for (uint32_t i = 0; i < pending.size(); ++i) by_class_[next[pending[i].class_index]++] = i;
  }

  // Calls emit(entry) for each entry of the merged store: the file's, in its order, then imported ones it
  // lacked, then this build's new classes and edges. Entries too old or without runs are left out.
  // `old` may be null; false when it could not be read.
  template <typename Emit>
  bool Walk(std::FILE* old, const std::string& name, Emit&& emit) {
    class_seen_.assign(store_.pending_class_keys_.size(), false);
    key_seen_.assign(by_key_.size(), false);
    extra_used_edges_.clear();
    extra_used_classes_.clear();
    StoreEntry entry;
    if (old) {
      std::rewind(old);
      StoreEntryReader reader(old, name);
      reader.set_caps(kSamplesPerClass, kRunsPerEdge);
      int version = kVersion;
      if (reader.ReadHeader(&version).empty() && version <= kVersion) {
        while (reader.Next(&entry)) {
          TakeExtra(&entry);
          AddRuns(&entry);
          Offer(entry, emit);
        }
      }
      if (std::ferror(old)) return false;
    }
    if (extra_) {
      for (const auto& [key, stored] : extra_->classes) {
        if (extra_used_classes_.count(key)) continue;
        entry = StoreEntry{'C', key, 0, {}, stored.last_used_s, stored.samples};
        AddRuns(&entry);
        Offer(entry, emit);
      }
      for (const auto& [key, stored] : extra_->edges) {
        if (extra_used_edges_.count(key)) continue;
        entry = StoreEntry{'E', {}, key, stored.output, stored.last_used_s,
                           {stored.history.recent.begin(), stored.history.recent.end()}};
        AddRuns(&entry);
        Offer(entry, emit);
      }
    }
    for (uint32_t c = 0; c < class_seen_.size(); ++c) {
      if (class_seen_[c]) continue;
      entry = StoreEntry{'C', store_.pending_class_keys_[c], 0, {}, 0, {}};
      AddRuns(&entry);
      Offer(entry, emit);
    }
    for (size_t first = 0; first < by_key_.size();) {
      const size_t last = GroupEnd(first);
      if (!key_seen_[first]) {
        const Pending& one = store_.pending_[by_key_[first]];
        entry = StoreEntry{'E', {}, one.key, std::string(store_.PendingOutput(one)), 0, {}};
        AddRuns(&entry);
        Offer(entry, emit);
      }
      first = last;
    }
    return true;
  }

 private:
  template <typename Emit>
  void Offer(const StoreEntry& entry, Emit& emit) {
    if (entry.last_used_s >= oldest_ && !entry.records.empty()) emit(entry);
  }

  size_t GroupEnd(size_t first) const {
    size_t last = first + 1;
    while (last < by_key_.size() && store_.pending_[by_key_[last]].key == store_.pending_[by_key_[first]].key) ++last;
    return last;
  }

  // An imported entry newer than the file's replaces it whole (importing twice adds nothing).
  void TakeExtra(StoreEntry* entry) {
    if (!extra_) return;
    if (entry->kind == 'C') {
      auto found = extra_->classes.find(entry->class_key);
      if (found == extra_->classes.end()) return;
      extra_used_classes_.insert(entry->class_key);
      if (!entry->records.empty() && entry->last_used_s >= found->second.last_used_s) return;
      entry->last_used_s = found->second.last_used_s;
      entry->records = found->second.samples;
      return;
    }
    auto found = extra_->edges.find(entry->key);
    if (found == extra_->edges.end()) return;
    extra_used_edges_.insert(entry->key);
    if (!entry->records.empty() && entry->last_used_s >= found->second.last_used_s) return;
    entry->output = found->second.output;
    entry->last_used_s = found->second.last_used_s;
    entry->records.assign(found->second.history.recent.begin(), found->second.history.recent.end());
  }

  // This build's runs of the entry's class or edge, in the order they ran (every copy of an entry a
  // hand-edited file holds twice gets them: the last one read counts).
  void AddRuns(StoreEntry* entry) {
    const std::deque<Pending>& pending = store_.pending_;
    if (entry->kind == 'C') {
      auto found = store_.pending_class_index_.find(entry->class_key);
      if (found == store_.pending_class_index_.end()) return;
      const uint32_t c = found->second;
      class_seen_[c] = true;
      for (uint32_t i = class_start_[c]; i < class_start_[c + 1]; ++i) {
        const Pending& one = pending[by_class_[i]];
        AddCapped(&entry->records, one.record, kSamplesPerClass);
        entry->last_used_s = std::max(entry->last_used_s, one.time_s);
      }
      return;
    }
    auto first = std::lower_bound(by_key_.begin(), by_key_.end(), entry->key,
                                  [&](uint32_t i, uint64_t key) { return pending[i].key < key; });
    if (first == by_key_.end() || pending[*first].key != entry->key) return;
    key_seen_[first - by_key_.begin()] = true;
    for (auto it = first; it != by_key_.end() && pending[*it].key == entry->key; ++it) {
      const Pending& one = pending[*it];
      if (entry->records.empty() && entry->output.empty()) entry->output = store_.PendingOutput(one);
      AddCapped(&entry->records, one.record, kRunsPerEdge);
      entry->last_used_s = std::max(entry->last_used_s, one.time_s);
    }
  }

  const UserStore& store_;
  const Contents* extra_;
  const int64_t oldest_;
  std::vector<uint32_t> by_key_;       // positions in pending_, by (key, position)
  std::vector<uint32_t> by_class_;     // positions in pending_, by (class, position)
  std::vector<uint32_t> class_start_;  // where each class's runs start in by_class_
  std::vector<bool> class_seen_, key_seen_;  // key_seen_: at the first position of each key's runs
  std::unordered_set<uint64_t> extra_used_edges_;
  std::unordered_set<std::string> extra_used_classes_;
};

bool UserStore::WriteMerged(const Contents* extra, int64_t now_s, std::string* error) {
  if (!MakeDirs(dir_, error)) return false;
  StoreLock lock(dir_ + "/" + kLockName, limits_.lock_wait_ms, error);
  if (!lock.locked()) return false;
  // Every writer holds this lock while its temp file exists: any temp file here now was left by a crash.
  RemoveStaleTempFiles(file_path(), 0, /*all_dead=*/true);
  // Re-read under the lock: another build may have written since this one loaded. What this build loaded is
  // let go first (nothing estimates any more once the build writes).
  ForgetLoaded();
  const std::string path = file_path();
  std::unique_ptr<std::FILE, FileCloser> old(std::fopen(path.c_str(), "rb"));
  if (!old && errno != ENOENT) {
    *error = fmt::format("cannot read {}: {}", path, std::strerror(errno));
    return false;
  }
  if (old) {
    StoreEntryReader header(old.get(), path);
    int version = kVersion;
    if (header.ReadHeader(&version).empty() && version > kVersion) {
      *error = fmt::format("{} was written by a newer headroom; left untouched", path);
      return false;
    }
  }
  Merge merge(*this, extra, now_s);
  const std::string header = fmt::format("{}{}\n", StoreEntryReader::kMagic, kVersion);
  std::string text;
  // First the total: most merges fit, and then every entry is kept.
  uint64_t total = header.size();
  size_t entries = 0;
  auto size_of = [&text](const StoreEntry& entry) {
    text.clear();
    AppendStoreEntry(entry, &text);
    return text.size();
  };
  if (!merge.Walk(old.get(), path, [&](const StoreEntry& entry) {
        total += size_of(entry);
        ++entries;
      })) {
    *error = fmt::format("cannot read {}: {}", path, std::strerror(errno));
    return false;
  }
  // Over the bound: whole entries are dropped, least recently used first; a smaller, older one may still fit.
  std::vector<bool> kept;
  if (total > limits_.max_bytes) {
    struct Sized {
      int64_t last_used_s;
      uint32_t size;
    };
    std::vector<Sized> sized;
    sized.reserve(entries);
    merge.Walk(old.get(), path, [&](const StoreEntry& entry) {
      sized.push_back(Sized{entry.last_used_s, static_cast<uint32_t>(size_of(entry))});
    });
    std::vector<uint32_t> order(sized.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return sized[a].last_used_s != sized[b].last_used_s ? sized[a].last_used_s > sized[b].last_used_s : a < b;
    });
    kept.assign(sized.size(), false);
    uint64_t used = header.size();
    for (uint32_t i : order) {
      if (used + sized[i].size > limits_.max_bytes) continue;
      used += sized[i].size;
      kept[i] = true;
    }
  }
  std::string temp;
  const int temp_fd = CreateTempBeside(path, 0600, &temp);
  std::unique_ptr<std::FILE, FileCloser> out(temp_fd >= 0 ? fdopen(temp_fd, "wb") : nullptr);
  if (temp_fd >= 0 && !out) close(temp_fd);
  bool ok = out && std::fwrite(header.data(), 1, header.size(), out.get()) == header.size();
  size_t ordinal = 0;
  ok = ok && merge.Walk(old.get(), path, [&](const StoreEntry& entry) {
         if (!kept.empty() && !kept[ordinal++]) return;
         text.clear();
         AppendStoreEntry(entry, &text);
         ok = ok && std::fwrite(text.data(), 1, text.size(), out.get()) == text.size();
       });
  ok = out && std::fclose(out.release()) == 0 && ok;
  if (!ok || std::rename(temp.c_str(), path.c_str()) != 0) {
    *error = fmt::format("cannot write {}: {}", path, std::strerror(errno));
    if (temp_fd >= 0) std::remove(temp.c_str());  // only a file this call created
    return false;
  }
  return true;
}

std::string UserStore::Flush(int64_t now_s) {
  if (dir_.empty() || read_only_ || pending_.empty()) return "";
  std::string error;
  struct stat st;
  const bool created_now = quiet_if_uncreatable_ && stat(dir_.c_str(), &st) != 0;
  const bool written = WriteMerged(nullptr, now_s, &error);
  ForgetPending();
  if (!written) {
    read_only_ = true;
    if (created_now && stat(dir_.c_str(), &st) != 0) return "";
    return Warn(fmt::format("headroom store: {}; this build's figures are not kept there", error));
  }
  return "";
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
  const bool written = WriteMerged(&imported, now_s, error);
  ForgetPending();
  return written;
}

}  // namespace headroom
