// The per-user store file ($XDG_CACHE_HOME/headroom/history): a small versioned text file, replaced whole
// under a lock (read, merge, bound, write a temp file, rename), so concurrent builds never lose records and
// readers, who take no lock, never see half a file.
//   # headroom user store v1
//   C <last used, unix s> <class key>                 a job class; its samples follow as r lines
//   E <key hex> <last used> <normalised output>       an edge (PathNormaliser::EdgeKey); its runs follow
//   r <peak bytes> <duration ms> <method> <outcome>   oldest first
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
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "headroom/history/history_text.h"
#include "headroom/util/disk.h"

namespace headroom {
namespace {

using namespace history_text;

constexpr std::string_view kMagic = "# headroom user store v";

bool ParseRecord(std::string_view line, HistoryRecord* record) {
  return ParseRunFields(&line, record) && line.empty();
}

std::string RecordLine(const HistoryRecord& r) {
  return fmt::format("r\t{}\t{}\t{}\t{}\n", r.peak_bytes, r.duration_ms, static_cast<char>(r.method),
                     static_cast<char>(r.outcome));
}

void AddSample(std::vector<HistoryRecord>* samples, const HistoryRecord& record) {
  samples->push_back(record);
  if (samples->size() > UserStore::kSamplesPerClass) samples->erase(samples->begin());
}

// Holds the store's lock file exclusively. Polls rather than blocks, so a build stopped while holding it
// (SIGSTOP, a debugger) costs another build lock_wait_ms, not its end.
class StoreLock {
 public:
  StoreLock(const std::string& path, int wait_ms, std::string* error) {
    fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      *error = fmt::format("cannot open {}: {}", path, std::strerror(errno));
      return;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
    while (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK && errno != EINTR) {
        *error = fmt::format("cannot lock {}: {}", path, std::strerror(errno));
        return;
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        *error = fmt::format("{} stayed locked for {} ms by another build", path, wait_ms);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    locked_ = true;
  }
  ~StoreLock() {
    if (fd_ >= 0) close(fd_);  // closing releases the lock
  }
  bool locked() const { return locked_; }

 private:
  int fd_ = -1;
  bool locked_ = false;
};

bool MakeDirs(const std::string& dir, std::string* error) {
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    std::string prefix = dir.substr(0, slash);
    if (!prefix.empty() && mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      *error = fmt::format("cannot create {}: {}", prefix, std::strerror(errno));
      return false;
    }
    if (slash == std::string::npos) return true;
  }
}

// Writes `text` to `path` through a temp file in the same directory and a rename.
bool ReplaceFile(const std::string& path, const std::string& text, std::string* error) {
  const std::string temp = fmt::format("{}.tmp.{}", path, getpid());
  std::FILE* file = std::fopen(temp.c_str(), "wb");
  bool ok = file && std::fwrite(text.data(), 1, text.size(), file) == text.size();
  ok = file && std::fclose(file) == 0 && ok;
  if (!ok || std::rename(temp.c_str(), path.c_str()) != 0) {
    *error = fmt::format("cannot write {}: {}", path, std::strerror(errno));
    std::remove(temp.c_str());
    return false;
  }
  return true;
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
  const size_t header_end = text.find('\n');
  std::string_view header = text.substr(0, header_end);
  if (header.substr(0, kMagic.size()) != kMagic) return fmt::format("{} is not a headroom user store", name);
  int version = 0;
  if (!ParseInt(header.substr(kMagic.size()), &version) || version < 1) {
    return fmt::format("{} has an unreadable version ('{}')", name, header);
  }
  contents->version = version;
  if (version > kVersion) return "";  // the caller decides: never read, never written
  if (header_end == std::string_view::npos) return fmt::format("{} is truncated", name);
  // An edge takes at least two lines of about 40 bytes: sizing the table once spares the rehashes that
  // dominated loading a large store.
  contents->edges.reserve(contents->edges.size() + text.size() / 96);
  std::vector<HistoryRecord>* class_samples = nullptr;
  EdgeHistory* edge = nullptr;
  std::string decoded;
  size_t line_number = 1;
  for (size_t pos = header_end + 1; pos < text.size();) {
    ++line_number;
    const size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) return fmt::format("{} is truncated at line {}", name, line_number);
    std::string_view line = text.substr(pos, end - pos), kind, field;
    pos = end + 1;
    bool ok = NextField(&line, &kind);
    if (ok && kind == "r") {
      HistoryRecord record;
      ok = (class_samples || edge) && ParseRecord(line, &record);
      if (ok && class_samples) AddSample(class_samples, record);
      if (ok && edge) edge->recent.Add(record);
    } else if (ok && kind == "C") {
      int64_t last_used = 0;
      ok = NextField(&line, &field) && ParseInt(field, &last_used) && Unescape(line, &decoded) && !decoded.empty();
      if (ok) {
        StoredClass& stored = contents->classes[decoded];
        stored.last_used_s = std::max(stored.last_used_s, last_used);
        stored.samples.clear();
        class_samples = &stored.samples;
        edge = nullptr;
      }
    } else if (ok && kind == "E") {
      uint64_t key = 0;
      int64_t last_used = 0;
      ok = NextField(&line, &field) && ParseInt(field, &key, 16) && NextField(&line, &field) &&
           ParseInt(field, &last_used) && Unescape(line, &decoded);
      if (ok) {
        StoredEdge& stored = contents->edges[key];
        stored.output = decoded;
        stored.last_used_s = std::max(stored.last_used_s, last_used);
        stored.history.command_hash = key;
        stored.history.recent.clear();
        edge = &stored.history;
        class_samples = nullptr;
      }
    } else {
      ok = false;
    }
    if (!ok) return fmt::format("{} is corrupt at line {}", name, line_number);
  }
  return "";
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
  std::string warning = Load();
  if (!warning.empty() && warn_) warn_(warning);
  if (seed_target_) SeedClasses(seed_target_);
}

uint64_t UserStore::EdgeKey(std::string_view output, std::string_view class_key) const {
  return normaliser_.EdgeKey(output, class_key);
}

const EdgeHistory* UserStore::FindEdge(uint64_t key) const {
  auto found = contents_.edges.find(key);
  return found == contents_.edges.end() || found->second.history.recent.empty() ? nullptr : &found->second.history;
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
  AddPending(EdgeKey(output, class_key), normaliser_.Output(output), class_key, record, now_s);
}

void UserStore::AddPending(uint64_t key, std::string output, std::string_view class_key, const HistoryRecord& record,
                           int64_t time_s) {
  auto [it, inserted] = pending_class_index_.try_emplace(std::string(class_key),
                                                         static_cast<uint32_t>(pending_class_keys_.size()));
  if (inserted) pending_class_keys_.emplace_back(class_key);
  pending_.push_back(Pending{key, std::move(output), it->second, record, time_s});
}

void UserStore::AddBuildHistory(const HistoryStore& history, int64_t now_s) {
  for (const auto& [output, edge] : history.edges()) {
    const std::string& class_key = history.ClassById(edge.class_id).key();
    for (const HistoryRecord& record : edge.recent) {
      AddPending(EdgeKey(output, class_key), normaliser_.Output(output), class_key, record, now_s);
    }
  }
}

void UserStore::Apply(const Pending& pending, Contents* contents) const {
  const std::string& class_key = pending_class_keys_[pending.class_index];
  StoredEdge& edge = contents->edges[pending.key];
  if (edge.history.recent.empty()) edge.output = pending.output;
  edge.history.command_hash = pending.key;
  edge.history.recent.Add(pending.record);
  edge.last_used_s = std::max(edge.last_used_s, pending.time_s);
  StoredClass& stored = contents->classes[class_key];
  AddSample(&stored.samples, pending.record);
  stored.last_used_s = std::max(stored.last_used_s, pending.time_s);
}

bool UserStore::WriteMerged(const std::vector<Pending>& pending, const Contents* extra, int64_t now_s,
                            std::string* error) {
  if (!MakeDirs(dir_, error)) return false;
  StoreLock lock(dir_ + "/" + kLockName, limits_.lock_wait_ms, error);
  if (!lock.locked()) return false;
  // Re-read under the lock: another build may have written since this one loaded. What this build loaded is
  // let go first (nothing estimates any more once the build writes), so the store is never in memory twice.
  Contents().edges.swap(contents_.edges);
  Contents().classes.swap(contents_.classes);
  std::string text;
  const std::string path = file_path();
  Contents merged;
  const DiskInterface::ReadStatus read = ReadFileContents(path, &text, error);
  if (read == DiskInterface::ReadStatus::kOtherError) return false;
  if (read == DiskInterface::ReadStatus::kOkay && !text.empty()) {
    Parse(text, path, &merged);  // damage was reported at load; what precedes it is kept
    if (merged.version > kVersion) {
      *error = fmt::format("{} was written by a newer headroom; left untouched", path);
      return false;
    }
  }
  std::string().swap(text);
  if (extra) {
    // An imported file: entries newer than the store's replace them whole (importing twice adds nothing).
    for (const auto& [key, edge] : extra->edges) {
      StoredEdge& mine = merged.edges[key];
      if (!mine.history.recent.empty() && mine.last_used_s >= edge.last_used_s) continue;
      mine.output = edge.output;
      mine.last_used_s = edge.last_used_s;
      mine.history.command_hash = key;
      mine.history.recent.clear();
      for (const HistoryRecord& record : edge.history.recent) mine.history.recent.Add(record);
    }
    for (const auto& [key, stored] : extra->classes) {
      StoredClass& mine = merged.classes[key];
      if (!mine.samples.empty() && mine.last_used_s >= stored.last_used_s) continue;
      mine = stored;
    }
  }
  for (const Pending& one : pending) Apply(one, &merged);
  if (!ReplaceFile(path, Serialise(merged, limits_, now_s), error)) return false;
  contents_ = std::move(merged);
  return true;
}

std::string UserStore::Flush(int64_t now_s) {
  if (dir_.empty() || read_only_ || pending_.empty()) return "";
  std::string error;
  std::vector<Pending> pending = std::move(pending_);
  pending_.clear();
  struct stat st;
  const bool created_now = quiet_if_uncreatable_ && stat(dir_.c_str(), &st) != 0;
  if (!WriteMerged(pending, nullptr, now_s, &error)) {
    read_only_ = true;
    if (created_now && stat(dir_.c_str(), &st) != 0) return "";
    return Warn(fmt::format("headroom store: {}; this build's figures are not kept there", error));
  }
  return "";
}

bool UserStore::ExportTo(const std::string& path, std::string* error) const {
  Contents copy;
  const int64_t now_s = static_cast<int64_t>(time(nullptr));
  UserStoreLimits unbounded_age = limits_;
  unbounded_age.max_age_s = INT64_MAX / 2;
  Parse(Serialise(contents_, unbounded_age, now_s), path, &copy);
  for (const Pending& one : pending_) Apply(one, &copy);
  return ReplaceFile(path, Serialise(copy, limits_, now_s), error);
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
  std::vector<Pending> pending = std::move(pending_);
  pending_.clear();
  return WriteMerged(pending, &imported, now_s, error);
}

}  // namespace headroom
