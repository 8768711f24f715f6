// libFuzzer target: the build ledger's entry parser (memory/build_ledger.h) on arbitrary bytes, as a hostile user
// could write them into an entry file; whatever it accepts must format back into a record that parses the same.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "headroom/memory/build_ledger.h"

namespace {

bool SameEntry(const headroom::LedgerEntry& a, const headroom::LedgerEntry& b) {
  return a.id == b.id && a.pid == b.pid && a.cgroup == b.cgroup && a.parent_id == b.parent_id &&
         a.parent_job == b.parent_job && a.owed_bytes == b.owed_bytes && a.used_bytes == b.used_bytes &&
         a.budget_bytes == b.budget_bytes && a.updated_ms == b.updated_ms;
}

// Parses one record; whatever is accepted must be clamped and survive a rewrite.
void CheckRecord(std::string_view text) {
  headroom::LedgerEntry entry;
  std::string err;
  if (!headroom::ParseLedgerRecord(text, &entry, &err)) return;
  if (entry.owed_bytes > headroom::kMaxLedgerClaimBytes || entry.used_bytes > headroom::kMaxLedgerClaimBytes ||
      entry.budget_bytes > headroom::kMaxLedgerClaimBytes || entry.parent_job < -1 || entry.pid <= 0) {
    __builtin_trap();  // a figure escaped its clamp
  }
  headroom::LedgerEntry again;
  if (!headroom::ParseLedgerRecord(headroom::FormatLedgerRecord(entry), &again, &err) || !SameEntry(entry, again)) {
    __builtin_trap();  // an accepted record does not survive a rewrite
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The reader never looks past this many bytes of an entry.
  const std::string_view text(reinterpret_cast<const char*>(data), std::min(size, headroom::kMaxLedgerRecordBytes));
  CheckRecord(text);
  // The input's first line as a body with a correct checksum, so the fuzzer reaches the key=value parser without
  // having to find checksums.
  const std::string_view body = text.substr(0, std::min(text.find('\n'), text.size()));
  CheckRecord(fmt::format("{} sum={:016x}", body, headroom::LedgerRecordChecksum(body)));
  return 0;
}
