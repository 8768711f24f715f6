// .headroom_hashes reading and writing: a header naming the version, a table of (hash, path) pairs, one line
// per edge listing its pairs, and a closing line with the counts and a checksum of everything before it.
#include "headroom/logs/hash_log.h"

#include <charconv>
#include <unordered_set>

#include "headroom/util/disk.h"
#include "headroom/util/hashes.h"
#include "headroom/util/replace_file.h"

namespace headroom {
namespace {

constexpr std::string_view kHeaderPrefix = "# headroom content hashes v";
constexpr uint64_t kContentSeed = 0x68656164726f6f6dull;  // "headroom"
constexpr uint64_t kChecksumSeed = 0x6861736865732e31ull;

void AppendHex(uint64_t value, std::string* out) {
  char buffer[16];
  for (int i = 15; i >= 0; --i, value >>= 4) buffer[i] = "0123456789abcdef"[value & 0xf];
  out->append(buffer, sizeof buffer);
}

// Reads exactly 16 lowercase hex digits.
bool ParseHex(std::string_view text, uint64_t* value) {
  if (text.size() != 16) return false;
  *value = 0;
  for (char c : text) {
    int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (digit < 0) return false;
    *value = *value << 4 | static_cast<uint64_t>(digit);
  }
  return true;
}

bool ParseCount(std::string_view text, uint64_t* value) {
  if (text.empty() || text.size() > 19) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return ec == std::errc() && end == text.data() + text.size();
}

// Splits off the text before the next space (the rest after it); false when there is none.
bool NextField(std::string_view* rest, std::string_view* field) {
  size_t space = rest->find(' ');
  if (space == std::string_view::npos) {
    *field = *rest;
    *rest = {};
    return !field->empty();
  }
  *field = rest->substr(0, space);
  *rest = rest->substr(space + 1);
  return !field->empty();
}

// "end <pairs> <records> <checksum>", the closing line without its newline.
bool ParseTrailer(std::string_view line, uint64_t* pair_count, uint64_t* record_count, uint64_t* checksum) {
  std::string_view field;
  return NextField(&line, &field) && field == "end" && NextField(&line, &field) && ParseCount(field, pair_count) &&
         NextField(&line, &field) && ParseCount(field, record_count) && NextField(&line, &field) &&
         ParseHex(field, checksum) && line.empty();
}

// "r <outputs> <pair id>...": the outputs' pairs first, then the inputs'.
bool ParseRecord(std::string_view line, const std::vector<HashedFile>& pairs, HashRecord* record) {
  std::string_view field;
  uint64_t outputs = 0;
  if (!NextField(&line, &field) || field != "r" || !NextField(&line, &field) || !ParseCount(field, &outputs) ||
      outputs == 0)
    return false;
  while (!line.empty()) {
    uint64_t id = 0;
    if (!NextField(&line, &field) || !ParseCount(field, &id) || id >= pairs.size()) return false;
    (record->outputs.size() < outputs ? record->outputs : record->inputs).push_back(pairs[id]);
  }
  return record->outputs.size() == outputs;
}

}  // namespace

uint64_t HashLog::Checksum(std::string_view text) { return RapidHashV1(text.data(), text.size(), kChecksumSeed); }

uint64_t HashLog::HashContents(std::string_view contents) {
  return RapidHashV1(contents.data(), contents.size(), kContentSeed);
}

void HashLog::Clear() {
  paths_.clear();
  path_ids_.clear();
  records_.clear();
}

uint32_t HashLog::InternPath(std::string_view path) {
  auto it = path_ids_.find(std::string(path));
  if (it != path_ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(paths_.size());
  paths_.emplace_back(path);
  path_ids_.emplace(paths_.back(), id);
  return id;
}

int64_t HashLog::FindPath(std::string_view path) const {
  auto it = path_ids_.find(std::string(path));
  return it == path_ids_.end() ? -1 : it->second;
}

const HashRecord* HashLog::Find(std::string_view first_output) const {
  int64_t id = FindPath(first_output);
  if (id < 0) return nullptr;
  auto it = records_.find(static_cast<uint32_t>(id));
  return it == records_.end() ? nullptr : &it->second;
}

void HashLog::Set(std::string_view first_output, HashRecord record) {
  HashRecord& slot = records_[InternPath(first_output)];
  if (slot == record) return;
  slot = std::move(record);
  changed_ = true;
}

void HashLog::Erase(std::string_view first_output) {
  int64_t id = FindPath(first_output);
  if (id >= 0 && records_.erase(static_cast<uint32_t>(id))) changed_ = true;
}

std::string HashLog::Serialize() const {
  std::string text(kHeaderPrefix);
  text.append(std::to_string(kVersion)).push_back('\n');
  // Each (path, hash) pair is written once; records name pairs by their order in the table.
  std::unordered_map<uint64_t, uint64_t> pair_ids;  // (path id, hash) mixed -> pair id, verified below
  std::vector<HashedFile> pairs;
  std::string record_lines;
  auto pair_id = [&](const HashedFile& file) {
    uint64_t key = RapidHashV1(&file, sizeof file.path_id, file.hash);
    for (;; ++key) {  // open addressing over the mixed key, so a collision never merges two pairs
      auto [it, added] = pair_ids.emplace(key, pairs.size());
      if (added) {
        pairs.push_back(file);
        return it->second;
      }
      if (pairs[it->second] == file) return it->second;
    }
  };
  size_t record_count = 0;
  for (const auto& [key, record] : records_) {
    bool writable = !record.outputs.empty() && record.outputs[0].path_id == key;
    for (const auto* files : {&record.outputs, &record.inputs})
      for (const HashedFile& file : *files) writable = writable && paths_[file.path_id].find('\n') == std::string::npos;
    if (!writable) continue;
    record_lines.append("r ").append(std::to_string(record.outputs.size()));
    for (const auto* files : {&record.outputs, &record.inputs})
      for (const HashedFile& file : *files) record_lines.append(" ").append(std::to_string(pair_id(file)));
    record_lines.push_back('\n');
    ++record_count;
  }
  for (const HashedFile& pair : pairs) {
    text.append("f ");
    AppendHex(pair.hash, &text);
    text.append(" ").append(paths_[pair.path_id]).push_back('\n');
  }
  text.append(record_lines);
  const uint64_t checksum = Checksum(text);
  text.append("end ").append(std::to_string(pairs.size())).append(" ").append(std::to_string(record_count));
  text.push_back(' ');
  AppendHex(checksum, &text);
  text.push_back('\n');
  return text;
}

bool HashLog::Parse(std::string_view text, std::string* err) {
  Clear();
  changed_ = false;
  auto fail = [&](const char* why) {
    Clear();
    *err = why;
    return false;
  };
  // The header first: a different version is not corruption, and says so.
  size_t header_end = text.find('\n');
  if (text.substr(0, kHeaderPrefix.size()) != kHeaderPrefix || header_end == std::string_view::npos)
    return fail("not a content hash file");
  if (text.substr(kHeaderPrefix.size(), header_end - kHeaderPrefix.size()) != std::to_string(kVersion))
    return fail("unsupported version");

  // The closing line seals the file: without it, or with a wrong checksum, it was cut short or damaged.
  if (text.back() != '\n') return fail("truncated");
  size_t end_line = text.rfind('\n', text.size() - 2);
  if (end_line == std::string_view::npos || end_line < header_end) return fail("truncated");
  ++end_line;
  uint64_t pair_count = 0, record_count = 0, checksum = 0;
  if (!ParseTrailer(text.substr(end_line, text.size() - 1 - end_line), &pair_count, &record_count, &checksum))
    return fail("truncated");
  if (Checksum(text.substr(0, end_line)) != checksum) return fail("checksum mismatch");

  std::vector<HashedFile> pairs;
  std::string_view body = text.substr(header_end + 1, end_line - header_end - 1);
  while (!body.empty()) {
    size_t eol = body.find('\n');  // the body ends with a newline: the trailer follows it
    std::string_view line = body.substr(0, eol);
    body.remove_prefix(eol + 1);
    if (line.size() >= 20 && line.substr(0, 2) == "f " && line[18] == ' ') {
      HashedFile pair;
      if (!records_.empty() || !ParseHex(line.substr(2, 16), &pair.hash)) return fail("corrupt pair line");
      std::string_view path = line.substr(19);
      if (path.empty()) return fail("corrupt pair line");
      pair.path_id = InternPath(path);
      pairs.push_back(pair);
      continue;
    }
    HashRecord record;
    if (!ParseRecord(line, pairs, &record)) return fail("corrupt record line");
    const uint32_t key = record.outputs[0].path_id;
    if (!records_.emplace(key, std::move(record)).second) return fail("duplicate record");
  }
  if (pairs.size() != pair_count || records_.size() != record_count) return fail("counts do not match");
  return true;
}

void HashLog::Load(const std::string& path, std::string* warning) {
  std::string contents, err;
  switch (ReadFileContents(path, &contents, &err)) {
    case DiskInterface::ReadStatus::kNotFound:
      Clear();
      return;
    case DiskInterface::ReadStatus::kOtherError:
      Clear();
      *warning = "loading " + path + ": " + err + "; content hashes start over";
      return;
    case DiskInterface::ReadStatus::kOkay:
      break;
  }
  if (!Parse(contents, &err)) {
    *warning = path + ": " + err + "; content hashes start over";
    changed_ = true;  // rewrite it at the end of the build, even if nothing is recorded
  }
}

bool HashLog::Save(const std::string& path, std::string* err) const {
  if (!ReplaceFileContents(path, Serialize(), 0644, err)) return false;
  changed_ = false;
  return true;
}

}  // namespace headroom
