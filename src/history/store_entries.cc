// Reading the per-user store entry by entry and writing one entry back (format: user_store.cc's header).
#include "headroom/history/store_entries.h"

#include <cstdlib>

#include <fmt/format.h>

#include "headroom/history/history_text.h"

namespace headroom {

using namespace history_text;

void AddCapped(std::vector<HistoryRecord>* records, const HistoryRecord& record, size_t cap) {
  records->push_back(record);
  if (records->size() > cap) records->erase(records->begin());
}

StoreEntryReader::StoreEntryReader(std::string_view text, std::string name, bool has_header)
    : text_(text), name_(std::move(name)) {
  if (!has_header) line_number_ = 1;  // an entry cut out of a file: its lines are not counted from a header
}

StoreEntryReader::StoreEntryReader(std::FILE* file, std::string name) : file_(file), name_(std::move(name)) {}

StoreEntryReader::~StoreEntryReader() { std::free(buffer_); }

bool StoreEntryReader::Fail(const char* what) {
  failed_ = true;
  damage_ = fmt::format("{} is {} at line {}", name_, what, line_number_);
  return false;
}

// The next line without its newline. A last line without one was cut short by a writer that died: damage.
bool StoreEntryReader::ReadLine(std::string_view* line) {
  if (failed_) return false;
  line_offset_ = offset_;
  if (file_) {
    const ssize_t read = getline(&buffer_, &buffer_size_, file_);
    if (read <= 0) return false;
    ++line_number_;
    offset_ += static_cast<uint64_t>(read);
    if (buffer_[read - 1] != '\n') return Fail("truncated");
    *line = std::string_view(buffer_, static_cast<size_t>(read - 1));
    return true;
  }
  if (pos_ >= text_.size()) return false;
  ++line_number_;
  const size_t end = text_.find('\n', pos_);
  if (end == std::string_view::npos) return Fail("truncated");
  *line = text_.substr(pos_, end - pos_);
  offset_ += end + 1 - pos_;
  pos_ = end + 1;
  return true;
}

std::string StoreEntryReader::ReadHeader(int* version) {
  std::string_view header;
  bool complete = true;
  if (file_) {
    const ssize_t read = getline(&buffer_, &buffer_size_, file_);
    if (read > 0) {
      offset_ = static_cast<uint64_t>(read);
      complete = buffer_[read - 1] == '\n';
      header = std::string_view(buffer_, static_cast<size_t>(read) - (complete ? 1 : 0));
    }
  } else {
    const size_t end = text_.find('\n');
    complete = end != std::string_view::npos;
    header = text_.substr(0, end);
    pos_ = offset_ = complete ? end + 1 : text_.size();
  }
  line_number_ = 1;
  failed_ = true;  // until the header proves readable
  if (header.substr(0, kMagic.size()) != kMagic) return fmt::format("{} is not a headroom user store", name_);
  int read_version = 0;
  if (!ParseInt(header.substr(kMagic.size()), &read_version) || read_version < 1) {
    return fmt::format("{} has an unreadable version ('{}')", name_, header);
  }
  *version = version_ = read_version;
  if (read_version > kVersion) return "";  // the caller leaves it alone: never read further, never written
  if (!complete) return fmt::format("{} is truncated", name_);
  failed_ = false;
  return "";
}

bool StoreEntryReader::ReadHead(std::string_view line, StoreEntry* entry) {
  std::string_view kind, field;
  if (!NextField(&line, &kind) || kind.size() != 1) return false;
  entry->records.clear();
  entry->last_used_s = 0;
  if (kind == "C") {
    entry->kind = 'C';
    return NextField(&line, &field) && ParseInt(field, &entry->last_used_s) && Unescape(line, &entry->class_key) &&
           !entry->class_key.empty();
  }
  if (kind == "E") {
    entry->kind = 'E';
    return NextField(&line, &field) && ParseInt(field, &entry->key, 16) && NextField(&line, &field) &&
           ParseInt(field, &entry->last_used_s) && Unescape(line, &entry->output);
  }
  return false;
}

bool StoreEntryReader::Next(StoreEntry* entry) {
  std::string_view line;
  uint64_t start;
  if (holding_) {
    holding_ = false;
    line = held_;
    start = held_offset_;
  } else {
    if (!ReadLine(&line)) return false;
    start = line_offset_;
  }
  if (!ReadHead(line, entry)) return Fail("corrupt");
  entry->offset = start;
  entry->length = offset_ - start;
  const size_t cap = entry->kind == 'C' ? class_cap_ : edge_cap_;
  while (ReadLine(&line)) {
    if (line.size() >= 2 && line[0] == 'r' && line[1] == '\t') {
      std::string_view rest = line.substr(2);
      HistoryRecord record;
      if (!ParseRunFields(&rest, &record, /*with_rise=*/version_ >= 2) || !rest.empty()) {
        Fail("corrupt");
        return true;  // what this entry held before the damage is kept
      }
      AddCapped(&entry->records, record, cap);
      entry->length = offset_ - start;
      continue;
    }
    held_.assign(line);  // the next entry's head: read again by the next call
    held_offset_ = line_offset_;
    holding_ = true;
    break;
  }
  return true;
}

void AppendStoreEntry(const StoreEntry& entry, std::string* text) {
  if (entry.kind == 'C') {
    fmt::format_to(std::back_inserter(*text), "C\t{}\t{}\n", entry.last_used_s, Escape(entry.class_key));
  } else {
    fmt::format_to(std::back_inserter(*text), "E\t{:016x}\t{}\t{}\n", entry.key, entry.last_used_s,
                   Escape(entry.output));
  }
  for (const HistoryRecord& r : entry.records) {
    fmt::format_to(std::back_inserter(*text), "r\t{}\t{}\t{}\t{}\t{}\n", r.peak_bytes, r.duration_ms,
                   static_cast<char>(r.method), static_cast<char>(r.outcome), r.rise.Format());
  }
}

}  // namespace headroom
